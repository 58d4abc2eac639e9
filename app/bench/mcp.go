package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/listener"
)

// Clients of `warden bench mcp`.
const (
	// MCPClientLean posts tools/call on the session itself and reads the
	// answer: the load generator costs little of the shared processors.
	MCPClientLean = "lean"
	// MCPClientSDK is the Go SDK's client session.
	MCPClientSDK = "sdk"
)

// MCPOptions configures `warden bench mcp`.
type MCPOptions struct {
	Options
	// Client is MCPClientLean (default) or MCPClientSDK; both phases use
	// it. Either client opens its sessions with the SDK.
	Client string
	// Layout is MCPLayoutSplit (default) or MCPLayoutShared.
	Layout string
	// Trace, when set, is where an execution trace of the gateway's
	// fixed-rate phase is written (by the serving process).
	Trace string
}

// Layouts of `warden bench mcp`.
const (
	// MCPLayoutSplit runs the gateway and the echo server in a child
	// process pinned to one CPU, the client in this process on the
	// others: one core for server and gateway, and the CPU per call is
	// the child's alone.
	MCPLayoutSplit = "split"
	// MCPLayoutShared runs client, gateway and server in this process,
	// on every CPU.
	MCPLayoutShared = "shared"
)

// RunMCP is `warden bench mcp` (make bench-mcp): tools/call of a read-only
// echo tool of a loopback MCP server (Go SDK, streamable HTTP), called
// directly and through the MCP gateway's per-agent endpoint /mcp (every
// call authenticated, governed by the tool gateway's nine steps and
// recorded as a ToolCall), at o.Rate calls per second and at saturation.
// It prints both and the difference.
func RunMCP(ctx context.Context, mo MCPOptions, w io.Writer) ([]Result, error) {
	o := mo.Options.WithDefaults()
	switch mo.Client {
	case "":
		mo.Client = MCPClientLean
	case MCPClientLean, MCPClientSDK:
	default:
		return nil, fmt.Errorf("bench: client %q: want %s or %s", mo.Client, MCPClientLean, MCPClientSDK)
	}
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-bench-mcp-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		storeURL = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	var (
		ends    mcpEndpoints
		cpuOf   = processCPU
		profile = startCapture
		serving = localCycles
		where   = "client, gateway and server share this process; the direct phase's CPU is subtracted"
	)
	switch mo.Layout {
	case "", MCPLayoutSplit:
		if runtimeCPUs() < 2 {
			return nil, fmt.Errorf("bench: the split layout needs 2 CPUs, this machine has %d: use --layout %s", runtimeCPUs(), MCPLayoutShared)
		}
		// The child pins itself to the first CPU of those it inherits,
		// all of this process's: this process moves to the others only
		// once the child is ready.
		child, err := startMCPChild(ctx, storeURL, o.Rules)
		if err != nil {
			return nil, err
		}
		defer func() { _ = child.close() }()
		restore, left, err := pinOtherCPUs(1)
		if err != nil {
			return nil, err
		}
		defer restore()
		procs := runtime.GOMAXPROCS(left)
		defer runtime.GOMAXPROCS(procs)
		ends, cpuOf, profile, serving = child.ends, child.cpu, child.profile, child.gcCycles
		where = fmt.Sprintf("gateway and server in a process of their own pinned to 1 of %d CPUs (GOMAXPROCS %d), the client on the other %d; "+
			"the server process's CPU, the direct phase's subtracted", runtimeCPUs(), child.ends.Procs, left)
	case MCPLayoutShared:
		env, err := startMCPEnv(ctx, storeURL, o.Rules)
		if err != nil {
			return nil, err
		}
		defer env.close()
		ends = env.ends
	default:
		return nil, fmt.Errorf("bench: layout %q: want %s or %s", mo.Layout, MCPLayoutSplit, MCPLayoutShared)
	}
	token := ends.Token
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	direct, err := connectMCP(ctx, ends.Echo, &http.Client{Transport: hc.Transport})
	if err != nil {
		return nil, fmt.Errorf("connect to the echo server: %w", err)
	}
	defer func() { _ = direct.Close() }()
	viaGW, err := connectMCP(ctx, ends.MCP, &http.Client{Transport: bearer{token, hc.Transport}})
	if err != nil {
		return nil, fmt.Errorf("connect to the MCP gateway: %w", err)
	}
	defer func() { _ = viaGW.Close() }()
	var seq atomic.Int64
	call := func(cs *sdk.ClientSession, name string) func(context.Context) error {
		if mo.Client == MCPClientLean {
			lc := &leanClient{hc: &http.Client{Transport: hc.Transport}, url: direct.endpoint, sid: cs.ID(),
				version: cs.InitializeResult().ProtocolVersion, seq: &seq}
			if cs == viaGW.ClientSession {
				lc.url, lc.token = viaGW.endpoint, token
			}
			return func(ctx context.Context) error { return lc.call(ctx, name) }
		}
		return func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": fmt.Sprintf("hello %d", seq.Add(1))}})
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("tool error: %+v", res.Content)
			}
			return nil
		}
	}
	directCall, governed := call(direct.ClientSession, "echo"), call(viaGW.ClientSession, "echo.echo")
	// Warm the serving process through the gateway, then this one's heap
	// and connections with direct calls (warm.go).
	gwWarm, gwWarmed, err := warm(ctx, governed, serving)
	if err != nil {
		return nil, fmt.Errorf("warm-up through the MCP gateway: %w", err)
	}
	directWarm, directWarmed, err := warm(ctx, directCall, localCycles)
	if err != nil {
		return nil, fmt.Errorf("warm-up of the direct calls: %w", err)
	}
	var out []Result
	for _, ph := range []struct {
		name string
		fn   func(context.Context) error
		rate bool
	}{
		{"direct, fixed rate", directCall, true},
		{"gateway, fixed rate", governed, true},
		{"direct, saturation", directCall, false},
		{"gateway, saturation", governed, false},
	} {
		if o.FixedRateOnly && !ph.rate {
			continue
		}
		stopProfile := func() {}
		if strings.HasPrefix(ph.name, "gateway") {
			verb, path := "profile", o.CPUProfile
			if ph.rate {
				verb, path = "trace", mo.Trace
			}
			if stopProfile, err = profile(verb, path); err != nil {
				return nil, err
			}
		}
		cpu := cpuOf()
		var r Result
		if ph.rate {
			r = fixedRate(ctx, ph.fn, o.Rate, o.Duration)
		} else {
			r = saturate(ctx, ph.fn, o.Concurrency, o.Duration)
		}
		r.CPU = cpuOf() - cpu
		stopProfile()
		r.Name = ph.name
		out = append(out, r)
	}
	scheme, _, _ := strings.Cut(storeURL, "://")
	fmt.Fprintf(w, "MCP gateway benchmark (tools/call of a read-only echo tool, per-agent endpoint /mcp): store %s, %d policy rules, %d-second phases, %d CPUs, %s client\n%s\n",
		scheme, o.Rules, int(o.Duration.Seconds()), runtimeCPUs(), mo.Client, where)
	fmt.Fprintf(w, "warm-up, not measured: %d calls through the gateway (%s), %d direct (%s)\n",
		gwWarm, warmedNote(gwWarmed), directWarm, warmedNote(directWarmed))
	fmt.Fprintf(w, "%-22s %10s %10s %10s %10s %10s %8s\n", "phase", "calls", "calls/s", "p50", "p99", "cpu/call", "errors")
	for _, r := range out {
		fmt.Fprintf(w, "%-22s %10d %10.0f %10s %10s %10s %8d\n", r.Name, r.Calls, r.PerSecond(), ms(r.P50), ms(r.P99), us(r.CPUPerCall()), r.Errors)
	}
	fmt.Fprintf(w, "added latency at %d calls/s: p50 %s, p99 %s; gateway CPU per call at %d calls/s: %s", o.Rate,
		ms(out[1].P50-out[0].P50), ms(out[1].P99-out[0].P99), o.Rate, us(out[1].CPUPerCall()-out[0].CPUPerCall()))
	if len(out) == 4 {
		fmt.Fprintf(w, "\ngoverned throughput at saturation: %.0f calls/s; gateway CPU per call at saturation: %s\n",
			out[3].PerSecond(), us(out[3].CPUPerCall()-out[2].CPUPerCall()))
	} else {
		fmt.Fprintln(w)
	}
	return out, nil
}

// bearer adds the workload token to every request of the MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// session is a client session and the endpoint it was opened on.
type session struct {
	*sdk.ClientSession
	endpoint string
}

func connectMCP(ctx context.Context, url string, hc *http.Client) (session, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "warden-bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	return session{cs, url}, err
}

// leanClient posts tools/call of the echo tool on an established session
// and checks the answer (JSON or a server-sent event).
type leanClient struct {
	hc                       *http.Client
	url, sid, version, token string
	seq                      *atomic.Int64
}

func (c *leanClient) call(ctx context.Context, name string) error {
	n := c.seq.Add(1)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"b%d","method":"tools/call","params":{"name":%q,"arguments":{"text":"hello %d"}}}`, n, name, n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", res.StatusCode, raw)
	}
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 {
		raw = raw[i+len("data: "):]
		if j := bytes.IndexByte(raw, '\n'); j >= 0 {
			raw = raw[:j]
		}
	}
	var msg struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(raw, &msg); {
	case err != nil:
		return fmt.Errorf("decode the answer: %w", err)
	case msg.Error != nil:
		return fmt.Errorf("JSON-RPC error: %s", msg.Error.Message)
	case msg.Result == nil || msg.Result.IsError:
		return fmt.Errorf("tool error: %s", raw)
	}
	return nil
}

// startEcho serves an MCP server with one read-only tool, echo.
func startEcho() (*http.Server, string, error) {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, v in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: v.Text}}}, nil, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: listener.RecoverHTTP(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil), stderrLog()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// mcpFixture is the benchmark's tenant: the echo MCP server, an agent that
// uses it and a policy of n rules that never fire.
func mcpFixture(url string, n int) string {
	var rules strings.Builder
	for i := range n {
		fmt.Fprintf(&rules, "    - name: r%d\n      when: 'tool.name == \"other.tool%d\" && has(input.q) && input.q < 0'\n      action: deny\n", i, i)
	}
	return `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: echo}
spec: {url: "` + url + `"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bench-bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  mcpServers: [{name: echo}]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: bench-bot-dev}
spec: {agentRef: {name: bench-bot}, environment: dev}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: bench-rules}
spec:
  rules:
` + rules.String()
}
