package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/sandbox"
	"github.com/warden-dev/warden/app/store"
)

// Sandbox starts the processes of stdio MCP servers in the OS sandbox;
// *sandbox.Runner is one.
type Sandbox interface {
	Start(ctx context.Context, spec sandbox.Spec) (*sandbox.Process, error)
}

// TransportStdio is status.transport of a server run as a process.
const TransportStdio = "stdio"

// Supervision of stdio servers.
const (
	// DefaultStopGrace is how long a stopped server may take to exit
	// once its stdin is closed, before its sandbox is killed.
	DefaultStopGrace = 5 * time.Second
	// stdioStderrBytes bounds the stderr kept of each process.
	stdioStderrBytes = 64 << 10
	// restartMin and restartMax bound the delay before a restart: the
	// first restart is immediate, the next ones wait twice as long each.
	restartMin = 500 * time.Millisecond
	restartMax = 30 * time.Second
	// stableAfter is how long a process must have served for its exit to
	// count as a first failure again.
	stableAfter = time.Minute
	// maxStartFailures ends the supervision of a server that failed to
	// start this many times in a row; its next use starts it again.
	maxStartFailures = 5
)

// stdioKey names one stdio server.
type stdioKey struct{ tenant, ns, name string }

func (k stdioKey) String() string { return k.ns + "/" + k.name }

// stdioServers runs the process of each stdio MCP server this replica uses
// (one per server), connected with the SDK's IO transport over its stdin
// and stdout. A process is started on first use (discovery or a call),
// restarted with backoff when it dies, and stopped when its server is
// deleted or quarantined, its spec changes, a Secret it references
// changes, or the Service closes.
type stdioServers struct {
	s *Service

	mu     sync.Mutex
	m      map[stdioKey]*stdioProc
	closed bool
	wg     sync.WaitGroup
}

func newStdioServers(s *Service) *stdioServers {
	return &stdioServers{s: s, m: map[stdioKey]*stdioProc{}}
}

// stdioProc supervises the process of one server with one spec.
type stdioProc struct {
	key    stdioKey
	hash   string // specHash of the spec it runs
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	cs      *sdk.ClientSession // the ready session; nil while (re)starting
	proc    *sandbox.Process   // the running process
	err     error              // why the last start or process failed
	ended   bool               // the supervision is over; err says why
	retryAt time.Time          // when the next start begins, after err
	changed chan struct{}      // closed and replaced on each change above
	secrets map[string]string  // Secret name → uid/generation at start
}

// publish changes the state seen by callers and wakes those waiting.
func (p *stdioProc) publish(fn func()) {
	p.mu.Lock()
	fn()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// endedError is a failure that ends a supervision instead of a restart:
// the server is gone, quarantined or changed, or its spec cannot run.
type endedError struct{ err error }

func (e endedError) Error() string { return e.err.Error() }
func (e endedError) Unwrap() error { return e.err }

// endWith marks err as ending the supervision.
func endWith(err error) error { return endedError{err} }

// errStopped is the state of a supervision stopped on purpose.
var errStopped = errors.New("the process was stopped")

// session returns the ready session of a stdio server, starting its
// process when there is none, and waits (at most DialTimeout) while it
// starts or restarts.
func (st *stdioServers) session(ctx context.Context, key stdioKey, spec resource.MCPServerSpec) (*sdk.ClientSession, error) {
	if st.s.cfg.Sandbox == nil {
		return nil, ErrNoSandbox
	}
	p, err := st.get(key, specHash(spec))
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(st.s.cfg.DialTimeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		cs, perr, ended, retryAt, changed := p.cs, p.err, p.ended, p.retryAt, p.changed
		p.mu.Unlock()
		switch {
		case cs != nil:
			return cs, nil
		case ended:
			return nil, perr
		case perr != nil && retryAt.Sub(st.s.now()) > st.s.cfg.DialTimeout:
			return nil, fmt.Errorf("%w (next start in %s)", perr, retryAt.Sub(st.s.now()).Round(time.Second))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			if perr != nil {
				return nil, perr
			}
			return nil, fmt.Errorf("the process did not answer initialize within %s", st.s.cfg.DialTimeout)
		}
	}
}

// get returns the supervisor of a server running spec hash, starting one
// (and retiring one that runs another spec or has ended) as needed.
func (st *stdioServers) get(key stdioKey, hash string) (*stdioProc, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errors.New("the MCP gateway is shutting down")
	}
	if p := st.m[key]; p != nil {
		p.mu.Lock()
		ended := p.ended
		p.mu.Unlock()
		if p.hash == hash && !ended {
			return p, nil
		}
		p.cancel()
	}
	ctx, cancel := context.WithCancel(st.s.base)
	p := &stdioProc{key: key, hash: hash, ctx: ctx, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	st.m[key] = p
	st.wg.Add(1)
	go st.supervise(p)
	return p, nil
}

// stop stops the process of a server, if this replica runs one, without
// waiting for it to exit.
func (st *stdioServers) stop(key stdioKey, why string) {
	st.mu.Lock()
	p := st.m[key]
	delete(st.m, key)
	st.mu.Unlock()
	if p != nil {
		st.s.log.Info("stopping stdio MCP server", "tenant", key.tenant, "namespace", key.ns, "server", key.name, "reason", why)
		p.cancel()
	}
}

// drop forgets a session that failed under a call, so that the call's
// retry waits for the restarted process instead of using it again.
func (st *stdioServers) drop(key stdioKey, cs *sdk.ClientSession) {
	st.mu.Lock()
	p := st.m[key]
	st.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	mine := p.cs == cs
	if mine {
		p.cs = nil
	}
	p.mu.Unlock()
	if mine {
		_ = cs.Close() // the supervisor sees the session end and restarts
	}
}

// closeAll stops every process and waits until they are gone.
func (st *stdioServers) closeAll() {
	st.mu.Lock()
	st.closed = true
	for _, p := range st.m {
		p.cancel()
	}
	st.m = map[stdioKey]*stdioProc{}
	st.mu.Unlock()
	st.wg.Wait()
}

// supervise starts the process, watches it and restarts it with backoff
// until its context ends or a start fails for good.
func (st *stdioServers) supervise(p *stdioProc) {
	defer st.wg.Done()
	defer close(p.done)
	defer func() {
		st.mu.Lock()
		if st.m[p.key] == p {
			delete(st.m, p.key)
		}
		st.mu.Unlock()
	}()
	log := st.s.log.With("tenant", p.key.tenant, "namespace", p.key.ns, "server", p.key.name)
	failures := 0
	for {
		began := st.s.now()
		proc, cs, out, err := st.start(p)
		if err == nil {
			p.publish(func() { p.cs, p.proc, p.err = cs, proc, nil })
			log.Debug("stdio MCP server ready")
			err = st.watch(p, proc, cs, out)
			if st.s.now().Sub(began) >= stableAfter {
				failures = 0
			}
		}
		if p.ctx.Err() != nil {
			p.publish(func() { p.cs, p.proc, p.err, p.ended = nil, nil, errStopped, true })
			return
		}
		failures++
		if errors.As(err, new(endedError)) || failures >= maxStartFailures && proc == nil {
			log.Warn("stdio MCP server not restarted", "failures", failures, "err", err)
			p.publish(func() { p.cs, p.proc, p.err, p.ended = nil, nil, err, true })
			return
		}
		delay := restartDelay(failures)
		p.publish(func() { p.cs, p.proc, p.err, p.retryAt = nil, nil, err, st.s.now().Add(delay) })
		log.Warn("stdio MCP server failed; restarting", "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
		}
	}
}

// restartDelay is the wait before restart number n (1, 2, …) in a row.
func restartDelay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := restartMin << min(n-2, 16)
	return min(d, restartMax)
}

// start reads the server afresh (it must still exist, be unquarantined and
// run the same spec), resolves its environment, starts its process and
// initializes a session with it.
func (st *stdioServers) start(p *stdioProc) (*sandbox.Process, *sdk.ClientSession, *jsonLines, error) {
	ctx, cancel := context.WithTimeout(p.ctx, st.s.cfg.DialTimeout)
	defer cancel()
	spec, env, secrets, err := st.load(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	p.mu.Lock()
	p.secrets = secrets
	p.mu.Unlock()
	limits := resource.SandboxLimits{}
	if spec.Sandbox != nil {
		limits = *spec.Sandbox
	}
	sspec := sandbox.Spec{
		Command: append(slices.Clone(spec.Command), spec.Args...), Env: map[string]string{},
		CPUSeconds: limits.CPUSeconds, MemoryMB: limits.MemoryMB,
		AllowRead: limits.AllowRead, AllowWrite: limits.AllowWrite, AllowHosts: limits.AllowHosts,
		MaxOutputBytes: stdioStderrBytes,
	}
	for _, v := range env {
		sspec.Env[v.name] = v.value
		if v.secret {
			sspec.Redact = append(sspec.Redact, v.value)
		}
	}
	proc, err := st.s.cfg.Sandbox.Start(ctx, sspec)
	if errors.Is(err, sandbox.ErrInvalidSpec) {
		return nil, nil, nil, endWith(fmt.Errorf("the OS sandbox refuses the spec: %w", err))
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start %s in the OS sandbox: %w", spec.Command[0], err)
	}
	out := &jsonLines{r: proc.Stdout()}
	client := sdk.NewClient(&sdk.Implementation{Name: "warden-mcp-gateway", Version: Version}, nil)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: out, Writer: proc.Stdin()}, nil)
	if err != nil {
		exit := proc.Stop(st.s.cfg.StopGrace)
		return nil, nil, nil, processError(out, proc, exit, fmt.Errorf("initialize: %w", err))
	}
	return proc, cs, out, nil
}

// watch waits until the process exits, its session ends or the
// supervision is stopped, then stops the process and says what happened
// (nil when it was stopped on purpose).
func (st *stdioServers) watch(p *stdioProc, proc *sandbox.Process, cs *sdk.ClientSession, out *jsonLines) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	var sessionErr error
	select {
	case <-p.ctx.Done():
	case <-proc.Done():
	case err := <-ended:
		sessionErr = fmt.Errorf("the session ended: %v", err)
		if err == nil {
			sessionErr = errors.New("the session ended")
		}
	}
	p.publish(func() { p.cs, p.proc = nil, nil })
	_ = cs.Close()
	exit := proc.Stop(st.s.cfg.StopGrace)
	if p.ctx.Err() != nil {
		return nil
	}
	return processError(out, proc, exit, sessionErr)
}

// processError says why a process stopped serving: the protocol broken on
// stdout, else its exit and its last line on stderr (redacted), else
// cause (the session's or initialize's error, when the process was still
// running and had to be stopped).
func processError(out *jsonLines, proc *sandbox.Process, exit sandbox.Exit, cause error) error {
	if err := out.violation(); err != nil {
		return err
	}
	last := lastLine(proc.Stderr())
	if !exit.Killed || cause == nil {
		msg := "the process exited with code " + strconv.Itoa(exit.ExitCode)
		if last != "" {
			msg += "; its last line on stderr: " + last
		}
		return errors.New(msg)
	}
	if last != "" {
		return fmt.Errorf("%w (its last line on stderr: %s)", cause, last)
	}
	return cause
}

// lastLine is the last non-empty line of b, shortened.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

// envValue is one resolved variable of a process.
type envValue struct {
	name, value string
	secret      bool // from a Secret: masked in stderr, never logged
}

// load reads the server and the Secrets its environment names, in one
// transaction, and refuses to start a server that is gone, quarantined
// or no longer the spec this supervisor runs.
func (st *stdioServers) load(ctx context.Context, p *stdioProc) (resource.MCPServerSpec, []envValue, map[string]string, error) {
	var spec resource.MCPServerSpec
	var env []envValue
	secrets := map[string]string{}
	key := p.key
	err := st.s.st.View(ctx, key.tenant, func(ctx context.Context, r store.Reader) error {
		obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindMCPServer, Namespace: key.ns, Name: key.name})
		if errors.Is(err, store.ErrNotFound) {
			return endWith(fmt.Errorf("MCP server %q was deleted", key.name))
		}
		if err != nil {
			return fmt.Errorf("read MCP server %s: %w", key, err)
		}
		if reason := quarantineReason(obj); reason != "" {
			return endWith(apierr.New(apierr.CodeQuarantined, "MCP server %q is quarantined: %s", key.name, reason))
		}
		if spec, err = resource.DecodeSpec[resource.MCPServerSpec](obj); err != nil {
			return endWith(fmt.Errorf("MCP server %q: %w", key.name, err))
		}
		if spec.Transport != resource.MCPTransportStdio || specHash(spec) != p.hash {
			return endWith(fmt.Errorf("MCP server %q changed", key.name))
		}
		if len(spec.Command) == 0 {
			return endWith(fmt.Errorf("MCP server %q has no spec.command", key.name))
		}
		for i, e := range spec.Env {
			if e.SecretKeyRef == nil {
				env = append(env, envValue{name: e.Name, value: e.Value})
				continue
			}
			ref := e.SecretKeyRef
			if st.s.cfg.Secrets == nil {
				return endWith(fmt.Errorf("spec.env[%d] (%s) takes Secret %s, and this MCP gateway has no secret broker", i, e.Name, ref.Name))
			}
			secrets[ref.Name] = secretVersion(ctx, r, key.ns, ref.Name)
			// The message names the Secret and key, never a value.
			v, err := st.s.cfg.Secrets.Resolve(ctx, r, key.tenant, key.ns, ref.Name, ref.Key)
			if err != nil {
				return fmt.Errorf("spec.env[%d] (%s): Secret %s key %s cannot be resolved", i, e.Name, ref.Name, ref.Key)
			}
			env = append(env, envValue{name: e.Name, value: v, secret: true})
		}
		return nil
	})
	return spec, env, secrets, err
}

// secretVersion identifies the stored state of a Secret: it changes when
// the Secret is rotated, deleted or created again.
func secretVersion(ctx context.Context, r store.Reader, ns, name string) string {
	o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindSecret, Namespace: ns, Name: name})
	if err != nil {
		return "missing"
	}
	return o.Metadata.UID + "/" + strconv.FormatInt(o.Metadata.Generation, 10)
}

// specHash identifies what a process is started from: a change of any of
// these fields restarts it.
func specHash(spec resource.MCPServerSpec) string {
	b, _ := json.Marshal(struct {
		Command []string
		Args    []string
		Env     []resource.EnvVar
		Sandbox *resource.SandboxLimits
	}{spec.Command, spec.Args, spec.Env, spec.Sandbox})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// reconcile stops the processes of a tenant whose server is gone,
// quarantined or changed, or whose Secrets changed: it runs after every
// configuration commit of the tenant, from any replica.
func (st *stdioServers) reconcile(tenant string) {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	var procs []*stdioProc
	for k, p := range st.m {
		if k.tenant == tenant {
			procs = append(procs, p)
		}
	}
	if len(procs) == 0 {
		st.mu.Unlock()
		return
	}
	st.wg.Add(1)
	st.mu.Unlock()
	go func() {
		defer st.wg.Done()
		stale := map[stdioKey]string{}
		err := st.s.st.View(st.s.base, tenant, func(ctx context.Context, r store.Reader) error {
			for _, p := range procs {
				if why := p.stale(ctx, r); why != "" {
					stale[p.key] = why
				}
			}
			return nil
		})
		if err != nil {
			if st.s.base.Err() == nil {
				st.s.log.Warn("check stdio MCP servers after a configuration change", "tenant", tenant, "err", err)
			}
			return
		}
		for _, p := range procs {
			if why, ok := stale[p.key]; ok {
				st.mu.Lock()
				mine := st.m[p.key] == p
				st.mu.Unlock()
				if mine {
					st.stop(p.key, why)
				}
			}
		}
	}()
}

// stale says why the process must stop, or "".
func (p *stdioProc) stale(ctx context.Context, r store.Reader) string {
	obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindMCPServer, Namespace: p.key.ns, Name: p.key.name})
	if errors.Is(err, store.ErrNotFound) {
		return "the MCP server was deleted"
	}
	if err != nil {
		return ""
	}
	if quarantineReason(obj) != "" {
		return "the MCP server is quarantined"
	}
	spec, err := resource.DecodeSpec[resource.MCPServerSpec](obj)
	if err != nil || spec.Transport != resource.MCPTransportStdio || specHash(spec) != p.hash {
		return "the MCP server's spec changed"
	}
	p.mu.Lock()
	secrets := p.secrets
	p.mu.Unlock()
	for name, version := range secrets {
		if secretVersion(ctx, r, p.key.ns, name) != version {
			return fmt.Sprintf("Secret %s changed", name)
		}
	}
	return ""
}

// jsonLines reads a stdio server's stdout for the SDK and checks that each
// line starts a JSON value, as the stdio transport requires: a server that
// writes anything else there (a banner, a log line) gets a clear error
// instead of an obscure decoding failure. It never keeps or reports what
// was written.
type jsonLines struct {
	r io.ReadCloser

	mu      sync.Mutex
	line    int  // 1-based number of the current line
	inLine  bool // past the first non-blank byte of the line
	invalid error
}

// errNotJSONRPC is the protocol violation of a stdio server.
var errNotJSONRPC = errors.New("a stdio MCP server must write only JSON-RPC messages to stdout (one per line) and its logs to stderr")

// Read implements io.Reader: it passes bytes on up to the first one that
// breaks the protocol, then fails.
func (j *jsonLines) Read(b []byte) (int, error) {
	j.mu.Lock()
	invalid := j.invalid
	j.mu.Unlock()
	if invalid != nil {
		return 0, invalid
	}
	n, err := j.r.Read(b)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.line == 0 {
		j.line = 1
	}
	for i, c := range b[:n] {
		switch {
		case c == '\n':
			j.inLine = false
			j.line++
		case j.inLine || c == ' ' || c == '\t' || c == '\r':
		case c == '{' || c == '[':
			j.inLine = true
		default:
			j.invalid = fmt.Errorf("the server wrote line %d of its stdout, which is not a JSON-RPC message: %w", j.line, errNotJSONRPC)
			if i == 0 {
				return 0, j.invalid
			}
			return i, nil
		}
	}
	return n, err
}

// Close implements io.Closer.
func (j *jsonLines) Close() error { return j.r.Close() }

// violation is the protocol violation seen, or nil.
func (j *jsonLines) violation() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.invalid
}

// running reports whether this replica runs a ready process for a server.
func (st *stdioServers) running(key stdioKey) *sandbox.Process {
	st.mu.Lock()
	p := st.m[key]
	st.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}
