package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/client"
)

// Exit codes scripts can rely on. They are documented in docs/cli.md.
const (
	ExitOK = 0
	// ExitFailure is a generic failure; `diff` also uses it to say that
	// differences were found, as `kubectl diff` does.
	ExitFailure = 1
	// ExitUsage is a malformed command line: unknown command, flag or kind,
	// wrong number of arguments.
	ExitUsage = 2
	// ExitNotFound is a resource that does not exist (HTTP 404).
	ExitNotFound = 3
	// ExitRejected is a body refused by admission or a call refused by
	// policy or authorization (HTTP 422 or 403).
	ExitRejected = 4
	// ExitUnauthenticated is a missing or invalid credential (HTTP 401).
	ExitUnauthenticated = 5
	// ExitUnreachable is a server that could not be reached.
	ExitUnreachable = 6
	// ExitConflict is a write that lost a race or a stale resourceVersion
	// (HTTP 409).
	ExitConflict = 7
)

// Env is everything a command run may touch outside its arguments.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv reads an environment variable, like os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Now is the clock used for ages and by `up`.
	Now func() time.Time
}

// OSEnv returns the Env of the running process.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: os.LookupEnv, Now: time.Now}
}

func (e Env) withDefaults() Env {
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.LookupEnv == nil {
		e.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return e
}

// Run runs the warden command line args (args[0] is the program name) in
// the process's environment and returns the exit code.
func Run(ctx context.Context, args []string) int {
	return RunWith(ctx, OSEnv(), args)
}

// RunWith runs args (args[0] is the program name) with the given streams
// and environment and returns the exit code. Errors are printed to
// env.Stderr as "error: …" lines.
func RunWith(ctx context.Context, env Env, args []string) int {
	env = env.withDefaults()
	root := newRootCmd(env)
	if len(args) > 0 {
		args = args[1:]
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	return report(env.Stderr, err)
}

// exitError carries an exit code chosen by a command itself, e.g. diff
// found differences. An empty message prints nothing.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageError marks a malformed command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// report prints err and returns its exit code.
func report(w io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(w, "error: "+ee.msg)
		}
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "error: %s\nRun 'warden --help' for usage.\n", ue.err)
		return ExitUsage
	}
	if errors.Is(err, client.ErrUnreachable) {
		fmt.Fprintf(w, "error: %s\nIs the Warden server running? Start it with `warden up`, or point the CLI at another server with --server or WARDEN_SERVER.\n", err)
		return ExitUnreachable
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(w, "error: interrupted")
		return ExitFailure
	}
	ae, ok := apierr.As(err)
	if !ok {
		fmt.Fprintln(w, "error: "+err.Error())
		return ExitFailure
	}
	status := client.StatusCode(err)
	if status == 0 {
		status = ae.Status()
	}
	if diags := client.Diagnostics(err); len(diags) > 0 {
		fmt.Fprintf(w, "error: %s: %s\n", ae.Code, ae.Message)
		for _, d := range diags {
			fmt.Fprintln(w, "error: "+formatDiagnostic(d, nil))
		}
	} else {
		fmt.Fprintf(w, "error: %s: %s\n", ae.Code, ae.Message)
	}
	switch status {
	case 401:
		fmt.Fprintln(w, "The server did not accept the credential. `warden up` writes the local admin key to $WARDEN_HOME/config.yaml; or pass --token / set WARDEN_TOKEN.")
		return ExitUnauthenticated
	case 403, 422:
		return ExitRejected
	case 404:
		return ExitNotFound
	case 409:
		return ExitConflict
	}
	return ExitFailure
}

// formatDiagnostic renders one admission diagnostic as
// "document 2 (Tool zendesk.reply): spec.sideEffect: NotSupported: …".
// Document numbers are one-based for people; the wire index is zero-based.
// When origins is not nil, the file a document came from is named too.
func formatDiagnostic(d api.Diagnostic, origins []origin) string {
	var b strings.Builder
	fmt.Fprintf(&b, "document %d", d.Document+1)
	var what []string
	if d.Kind != "" || d.Name != "" {
		what = append(what, strings.TrimSpace(d.Kind+" "+d.Name))
	}
	if d.Document >= 0 && d.Document < len(origins) {
		what = append(what, origins[d.Document].String())
	}
	if len(what) > 0 {
		b.WriteString(" (" + strings.Join(what, ", ") + ")")
	}
	b.WriteString(": ")
	if d.Path != "" {
		b.WriteString(d.Path + ": ")
	}
	if d.Code != "" {
		b.WriteString(d.Code + ": ")
	}
	b.WriteString(d.Message)
	if d.Policy != "" {
		b.WriteString(" [policy " + d.Policy + "]")
	}
	return b.String()
}
