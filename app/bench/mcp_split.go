package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// mcpEndpoints are what the client of `warden bench mcp` calls: the echo
// server directly, the MCP gateway's per-agent endpoint with the agent's
// token, and the GOMAXPROCS of the process serving them.
type mcpEndpoints struct {
	Echo  string `json:"echo"`
	MCP   string `json:"mcp"`
	Token string `json:"token"`
	Procs int    `json:"procs"`
}

// mcpEnv is the serving side of the benchmark: the echo MCP server and a
// private Warden whose MCP gateway serves the agent bench-bot.
type mcpEnv struct {
	ends  mcpEndpoints
	close func()
}

// startMCPEnv starts the echo server and a Warden on storeURL (a fresh
// installation) with the benchmark's fixture of rules policy rules, and
// discovers the echo server's tools.
func startMCPEnv(ctx context.Context, storeURL string, rules int) (_ *mcpEnv, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	echo, echoURL, err := startEcho()
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = echo.Close() })
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = st.Close() })
	admin, _, err := server.Bootstrap(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	if admin == "" {
		return nil, errors.New("bench: the store already holds a Warden installation; give the benchmark a fresh database of its own")
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), MCPAddr: "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	var lns [3]net.Listener
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- srv.ServeAll(sctx, lns[0], lns[1]) }()
	go func() { done <- srv.MCP().Serve(sctx, lns[2]) }()
	closers = append(closers, func() {
		cancel()
		<-done
		<-done
	})
	if err := apply(ctx, "http://"+lns[0].Addr().String(), admin, mcpFixture(echoURL, rules)); err != nil {
		return nil, err
	}
	if _, err := srv.MCP().Discover(ctx, auth.SystemPrincipal(server.LocalTenant), "default", "echo"); err != nil {
		return nil, fmt.Errorf("discover the echo server: %w", err)
	}
	token, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default",
		Agent: "bench-bot", Environment: "dev", Audience: workload.AudienceMCPGateway})
	if err != nil {
		return nil, err
	}
	return &mcpEnv{
		ends:  mcpEndpoints{Echo: echoURL, MCP: "http://" + lns[2].Addr().String() + "/mcp", Token: token, Procs: runtime.GOMAXPROCS(0)},
		close: closeAll,
	}, nil
}

// MCPServeOptions configures the serving process of `warden bench mcp`
// (the hidden `warden bench mcp-serve`).
type MCPServeOptions struct {
	// Store is the store URL, a fresh installation.
	Store string
	// Rules is the number of policy rules evaluated on every call.
	Rules int
}

// ServeMCP is the serving process of `warden bench mcp`'s split layout (a
// child, serveChild): it starts the echo server and the Warden of
// startMCPEnv, writes their endpoints to out as its hello, then answers
// the client process's commands, one a line on in, until in ends:
//
//	cpu             the process's user and system time, in nanoseconds
//	profile <path>  start a CPU profile written to path
//	trace <path>    start an execution trace written to path
//	stop            stop the profile or trace
//
// Each answer is one line: the figure, "ok" or "error: <message>".
func ServeMCP(ctx context.Context, o MCPServeOptions, in io.Reader, out io.Writer) error {
	if o.Store == "" {
		return errors.New("bench: mcp-serve needs --store")
	}
	env, err := startMCPEnv(ctx, o.Store, o.Rules)
	if err != nil {
		return err
	}
	defer env.close()
	stop := func() {}
	defer func() { stop() }()
	return serveChild(ctx, in, out, env.ends, func(_ context.Context, command string) (string, error) {
		cmd, arg, _ := strings.Cut(command, " ")
		switch cmd {
		case "cpu":
			return strconv.FormatInt(int64(processCPU()), 10), nil
		case "gc":
			n, on := gcCycles()
			return strconv.FormatUint(n, 10) + " " + strconv.FormatBool(on), nil
		case "profile", "trace":
			stop()
			s, err := startCapture(cmd, arg)
			if err != nil {
				stop = func() {}
				return "", err
			}
			stop = s
		case "stop":
			stop()
			stop = func() {}
		default:
			return "", fmt.Errorf("unknown command %q", cmd)
		}
		return "ok", nil
	})
}

// mcpChild is the serving process of the split layout, seen from the
// client process.
type mcpChild struct {
	*child
	ends mcpEndpoints
}

// startMCPChild runs this executable's `bench mcp-serve`, which pins
// itself to the first CPU this process may use, and waits for its
// endpoints; the caller pins itself to the others (pinOtherCPUs(1)).
func startMCPChild(ctx context.Context, storeURL string, rules int) (*mcpChild, error) {
	c := &mcpChild{}
	ch, err := startChild(ctx, []string{"bench", "mcp-serve", "--store", storeURL, "--rules", strconv.Itoa(rules)}, &c.ends)
	if err != nil {
		return nil, fmt.Errorf("bench: the serving process: %w", err)
	}
	c.child = ch
	return c, nil
}

// cpu is the serving process's user and system time; 0 when it cannot be
// read (the phase then shows no CPU figure).
func (c *mcpChild) cpu() time.Duration {
	a, err := c.ask("cpu")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(a, 10, 64)
	return time.Duration(n)
}

// gcCycles is the serving process's completed collections, and whether
// its collector is on.
func (c *mcpChild) gcCycles() (uint64, bool, error) {
	a, err := c.ask("gc")
	if err != nil {
		return 0, false, fmt.Errorf("bench: the serving process: %w", err)
	}
	n, on, _ := strings.Cut(a, " ")
	cycles, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("bench: the serving process's collections %q: %w", a, err)
	}
	return cycles, on == "true", nil
}

// profile starts a CPU profile ("profile") or an execution trace
// ("trace") of the serving process; no path, nothing.
func (c *mcpChild) profile(verb, path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	if _, err := c.ask(verb + " " + path); err != nil {
		return nil, fmt.Errorf("bench: the serving process: %w", err)
	}
	return func() { _, _ = c.ask("stop") }, nil
}
