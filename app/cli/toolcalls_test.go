package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// lockedBuffer is a bytes.Buffer that handlers may write while the test
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stack is a real Warden (control plane and tool gateway on a SQLite
// store) with examples/fleet and examples/fleet/demo applied, whose demo
// Tools call the demo tool server of `warden demo tools`.
type stack struct {
	t     *testing.T
	srv   *server.Server
	cpURL string
	gwURL string
	admin string
	// home is a WARDEN_HOME whose current context is the admin key in
	// namespace default.
	home string
	// demoOut is what the demo tools printed.
	demoOut *lockedBuffer
	demoURL string
}

// flakyFleet adds a tool that always fails (the demo server has no such
// path) and a second agent, for toolcalls top.
const flakyFleet = `apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: demo.broken}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "DEMO/no-such-endpoint"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: flaky-bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: claude-sonnet}
  tools: [{name: demo.broken}, {name: demo.search_tickets}]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: flaky-bot-dev}
spec: {agentRef: {name: flaky-bot}, environment: dev}
`

func startStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	admin, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = st.Close()
	})

	demoOut := &lockedBuffer{}
	demo := httptest.NewServer(newDemoTools(demoOut, time.Now))
	t.Cleanup(demo.Close)

	s := &stack{t: t, srv: srv, cpURL: "http://" + ln.Addr().String(), gwURL: "http://" + gln.Addr().String(),
		admin: admin, home: t.TempDir(), demoOut: demoOut, demoURL: demo.URL}
	cfg := clientconfig.New()
	cfg.SetContext(clientconfig.Context{Name: "local", Server: s.cpURL, Token: admin, Namespace: "default"})
	require.NoError(t, cfg.UseContext("local"))
	require.NoError(t, clientconfig.Save(s.home, cfg))

	// The example fleet and its demo directory, with the demo Tools
	// pointed at this test's demo server.
	dir := t.TempDir()
	for _, sub := range []string{"", "demo"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "examples", "fleet", sub, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			b = bytes.ReplaceAll(b, []byte("http://"+defaultDemoListen), []byte(demo.URL))
			require.NoError(t, os.WriteFile(filepath.Join(dir, sub, filepath.Base(f)), b, 0o644))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flaky.yaml"), []byte(strings.ReplaceAll(flakyFleet, "DEMO", demo.URL)), 0o644))
	res := s.run(t, nil, "apply", "-f", dir, "-f", filepath.Join(dir, "demo"))
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "compiledagentmanifest demo-bot-g1 compiled")
	return s
}

// run runs the CLI with the stack's WARDEN_HOME and the real clock.
func (s *stack) run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	vars := map[string]string{clientconfig.EnvHome: s.home}
	for k, v := range env {
		vars[k] = v
	}
	code := RunWith(t.Context(), Env{
		Stdout: &out, Stderr: &errb, Now: time.Now,
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	}, append([]string{"warden"}, args...))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// gwResponse is a gateway answer.
type gwResponse struct {
	status int
	header http.Header
	body   map[string]any
}

func (r gwResponse) name() string { return r.header.Get("Warden-Tool-Call") }
func (r gwResponse) phase() string {
	st, _ := r.body["status"].(map[string]any)
	p, _ := st["phase"].(string)
	return p
}

// gateway sends a request to the tool gateway as agent (deployed to dev).
func (s *stack) gateway(method, path, agent string, body any) gwResponse {
	s.t.Helper()
	tok, _, err := s.srv.Issuer().Issue(context.Background(), workload.IssueParams{
		Tenant: server.LocalTenant, Namespace: "default", Agent: agent, Environment: "dev", Audience: workload.AudienceToolGateway,
	})
	require.NoError(s.t, err)
	var rdr io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rdr = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.gwURL+path, rdr)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	r := gwResponse{status: res.StatusCode, header: res.Header}
	require.NoError(s.t, json.Unmarshal(raw, &r.body), string(raw))
	return r
}

// call makes a tool call as agent and checks the answer's status.
func (s *stack) call(agent, tool string, input map[string]any, wantStatus int) gwResponse {
	s.t.Helper()
	r := s.gateway(http.MethodPost, "/v1/tool-calls", agent, map[string]any{"tool": tool, "input": input})
	require.Equal(s.t, wantStatus, r.status, "%v", r.body)
	return r
}

// calls are the tool calls TestToolCallCommands makes.
type calls struct {
	search, denied, pending, issue, broken, flakySearch string
}

func TestToolCallCommands(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	c := calls{
		search:  s.call("demo-bot", "demo.search_tickets", map[string]any{"query": "charged"}, http.StatusOK).name(),
		denied:  s.call("demo-bot", "demo.refund", map[string]any{"chargeId": "ch_7731", "amount": 2500}, http.StatusForbidden).name(),
		pending: s.call("demo-bot", "demo.refund", map[string]any{"chargeId": "ch_7731", "amount": 49.9}, http.StatusAccepted).name(),
		issue:   s.call("demo-bot", "demo.create_issue", map[string]any{"title": "Checkout button unresponsive"}, http.StatusOK).name(),
	}
	again := s.call("demo-bot", "demo.create_issue", map[string]any{"title": "Checkout button unresponsive"}, http.StatusOK)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, c.issue, again.name())
	require.Equal(t, 1, strings.Count(s.demoOut.String(), "issue created #"), "a deduplicated retry does not execute again:\n%s", s.demoOut)
	c.broken = s.call("flaky-bot", "demo.broken", map[string]any{}, http.StatusBadGateway).name()
	c.flakySearch = s.call("flaky-bot", "demo.search_tickets", map[string]any{"query": "parcel"}, http.StatusOK).name()
	for _, n := range []string{c.search, c.denied, c.pending, c.issue, c.broken, c.flakySearch} {
		require.True(t, strings.HasPrefix(n, "tc-"), n)
	}
	ap := "ap-" + strings.TrimPrefix(c.pending, "tc-")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantNotOut []string
		wantErr    []string
		check      func(t *testing.T, stdout string)
	}{
		{
			name:    "get toolcalls",
			args:    []string{"get", "toolcalls"},
			wantOut: []string{"NAME", "AGENT", "TOOL", "SIDE-EFFECT", "PHASE", "APPROVAL", "AGE", "DURATION", c.search, c.denied, c.pending, c.broken},
			check: func(t *testing.T, stdout string) {
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				require.Len(t, lines, 7, "a header and one row per call; the replayed retry made no record")
				require.Regexp(t, `^NAME\s+AGENT\s+TOOL\s+SIDE-EFFECT\s+PHASE\s+APPROVAL\s+AGE\s+DURATION$`, lines[0])
				require.Regexp(t, `(?m)`+c.pending+`\s+demo-bot\s+demo.refund\s+financial\s+AwaitingApproval\s+pending\s+\S+\s+-$`, stdout)
				require.Regexp(t, c.search+`\s+demo-bot\s+demo.search_tickets\s+read_only\s+Succeeded\s+-\s+\S+\s+[0-9.]+(ms|s)\n`, stdout)
				require.Regexp(t, c.broken+`\s+flaky-bot\s+demo.broken\s+read_only\s+Failed\s`, stdout)
			},
		},
		{
			name:       "get toolcalls of one agent since an hour",
			args:       []string{"get", "toolcalls", "--agent", "flaky-bot", "--since", "1h"},
			wantOut:    []string{c.broken, c.flakySearch},
			wantNotOut: []string{"demo-bot"},
		},
		{
			name:       "phase filter in any case",
			args:       []string{"get", "toolcalls", "--phase", "denied"},
			wantOut:    []string{c.denied},
			wantNotOut: []string{c.search, c.pending},
		},
		{
			name:       "tool filter, wide",
			args:       []string{"get", "toolcall", "--tool", "demo.refund", "--agent", "demo-bot", "-o", "wide"},
			wantOut:    []string{"IDEMPOTENCY-KEY", "EXECUTION", c.denied, c.pending, "…"},
			wantNotOut: []string{c.search},
		},
		{
			name:    "all namespaces",
			args:    []string{"get", "toolcalls", "-A", "--agent", "flaky-bot"},
			wantOut: []string{"NAMESPACE   NAME", "default     " + c.broken},
		},
		{
			name:    "json",
			args:    []string{"get", "toolcalls", "--since", "1h", "--phase", "Succeeded", "-o", "json"},
			wantOut: []string{`"kind": "ToolCallList"`, c.search, c.issue, c.flakySearch},
			check: func(t *testing.T, stdout string) {
				var l struct{ Items []json.RawMessage }
				require.NoError(t, json.Unmarshal([]byte(stdout), &l))
				require.Len(t, l.Items, 3)
			},
		},
		{name: "nothing since a future time", args: []string{"get", "toolcalls", "--since", "2999-01-01T00:00:00Z"}, wantErr: []string{"No toolcalls found in namespace default."}},
		{name: "approvals filtered by agent", args: []string{"get", "approvals", "--agent", "demo-bot"}, wantOut: []string{ap, "demo.refund", "pending"}},
		{name: "unknown phase", args: []string{"get", "toolcalls", "--phase", "Exploded"}, wantCode: ExitUsage, wantErr: []string{`unknown phase "Exploded"`}},
		{name: "phase of approvals", args: []string{"get", "approvals", "--phase", "Failed"}, wantCode: ExitUsage, wantErr: []string{"approvals ls --status"}},
		{name: "filter on another kind", args: []string{"get", "agents", "--agent", "demo-bot"}, wantCode: ExitUsage, wantErr: []string{"toolcalls, approvals and executions only"}},
		{name: "bad since", args: []string{"get", "toolcalls", "--since", "yesterday"}, wantCode: ExitUsage, wantErr: []string{`--since "yesterday"`}},
		{name: "name with a filter", args: []string{"get", "toolcall", c.search, "--agent", "demo-bot"}, wantCode: ExitUsage},

		{
			name: "describe a call awaiting approval",
			args: []string{"describe", "toolcall", c.pending},
			wantOut: []string{
				"Name:             " + c.pending + "\n", "Agent:            demo-bot\n", "Environment:      dev\n", "Tool:             demo.refund\n",
				"Side Effect:      financial\n", "Approval:         required, pending\n", "Phase:            AwaitingApproval\n", "Completed:        <none>\n",
				"Input:\n  {\n    \"amount\": 49.9,\n    \"chargeId\": \"ch_7731\"\n  }\n", "Output:\n  <none>\n",
				"Approval " + ap + ":\n", "  Status:         pending\n", "  Reason:         tool demo.refund (financial) requires approval\n", "  Expires:",
			},
		},
		{
			name:       "describe shows the redacted output",
			args:       []string{"describe", "toolcall", c.search},
			wantOut:    []string{"Phase:            Succeeded\n", "Duration:", "Approval:         not required\n", `"email": "[REDACTED:EMAIL]"`, `"subject": "Charged twice for order 7731"`},
			wantNotOut: []string{"jane.doe@example.com", "Approval ap-"},
		},
		{
			name:    "describe a denied call",
			args:    []string{"describe", "toolcalls", c.denied},
			wantOut: []string{"Phase:            Denied\n", "Started:          <none>\n", `"code": "PolicyDenied"`, "deny-large-refunds"},
		},
		{name: "describe an unknown call", args: []string{"describe", "toolcall", "tc-nope"}, wantCode: ExitNotFound, wantErr: []string{"NotFound"}},

		{
			name: "top by count",
			args: []string{"toolcalls", "top", "--source", "records"},
			check: func(t *testing.T, stdout string) {
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				require.Regexp(t, `^TOOL\s+CALLS\s+SUCCEEDED\s+FAILED\s+DENIED\s+ERROR-RATE\s+P50\s+P95$`, lines[0])
				require.Len(t, lines, 5)
				require.Regexp(t, `^demo.refund\s+2\s+0\s+0\s+1\s+-\s+-\s+-$`, lines[1], "calls that never ran have no error rate or latency")
				require.Regexp(t, `^demo.search_tickets\s+2\s+2\s+0\s+0\s+0.0%\s+\S+ms\s+\S+ms$`, lines[2])
			},
		},
		{
			name: "top by error rate",
			args: []string{"toolcalls", "top", "--source", "records", "--by", "error_rate", "--since", "1h", "--limit", "1"},
			check: func(t *testing.T, stdout string) {
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				require.Len(t, lines, 2)
				require.Regexp(t, `^demo.broken\s+1\s+0\s+1\s+0\s+100.0%\s`, lines[1])
			},
		},
		{
			name: "top per agent as json",
			args: []string{"toolcalls", "top", "--source", "records", "--by", "latency", "--per-agent", "--agent", "flaky-bot", "-o", "json"},
			check: func(t *testing.T, stdout string) {
				var rep struct {
					By    string
					Calls int
					Items []struct {
						Tool, Agent              string
						Calls, Succeeded, Failed int
						ErrorRate, P50Ms, P95Ms  float64
					}
				}
				require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
				require.Equal(t, "latency", rep.By)
				require.Equal(t, 2, rep.Calls)
				require.Len(t, rep.Items, 2)
				for _, it := range rep.Items {
					require.Equal(t, "flaky-bot", it.Agent)
					require.Positive(t, it.P95Ms)
					if it.Tool == "demo.broken" {
						require.Equal(t, 1, it.Failed)
						require.InDelta(t, 1.0, it.ErrorRate, 1e-9)
					}
				}
			},
		},
		{name: "top of an agent without calls", args: []string{"toolcalls", "top", "--source", "records", "--agent", "nobody"}, wantErr: []string{"No tool calls found in namespace default since 1h."}},
		{name: "top by an unknown key", args: []string{"toolcalls", "top", "--by", "bogus"}, wantCode: ExitUsage, wantErr: []string{`unknown --by "bogus"`}},
		{name: "top of records by cost", args: []string{"toolcalls", "top", "--source", "records", "--by", "cost"}, wantCode: ExitUsage, wantErr: []string{"--by cost needs --source metrics"}},
		{name: "top from an unknown source", args: []string{"toolcalls", "top", "--source", "logs"}, wantCode: ExitUsage, wantErr: []string{`unknown --source "logs"`}},
		{name: "top yaml", args: []string{"toolcalls", "top", "-o", "yaml"}, wantCode: ExitUsage},
		{name: "top negative limit", args: []string{"toolcalls", "top", "--limit", "-1"}, wantCode: ExitUsage},
		{name: "top bad since", args: []string{"toolcalls", "top", "--since", "a while"}, wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := s.run(t, nil, tt.args...)
			require.Equal(t, tt.wantCode, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			for _, w := range tt.wantOut {
				require.Contains(t, res.stdout, w)
			}
			for _, w := range tt.wantNotOut {
				require.NotContains(t, res.stdout, w)
			}
			for _, w := range tt.wantErr {
				require.Contains(t, res.stderr, w)
			}
			if tt.check != nil {
				tt.check(t, res.stdout)
			}
		})
	}
}

func TestTopAggregates(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sorted := []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(7), ms(8), ms(9), ms(100)}
	require.Equal(t, ms(5), percentile(sorted, 50))
	require.Equal(t, ms(100), percentile(sorted, 95))
	require.Equal(t, ms(7), percentile([]time.Duration{ms(7)}, 95))

	rows := []toolStats{
		{Tool: "a", Calls: 5, ErrorRate: 0.2, p95: ms(10)},
		{Tool: "b", Calls: 9, ErrorRate: 0.1, p95: ms(50)},
		{Tool: "c", Calls: 1, ErrorRate: 0.2, p95: ms(5)},
	}
	order := func() string {
		var s string
		for _, r := range rows {
			s += r.Tool
		}
		return s
	}
	sortStats(rows, byErrorRate)
	require.Equal(t, "acb", order(), "ties on error rate go to the busier tool")
	sortStats(rows, byLatency)
	require.Equal(t, "bac", order())
	sortStats(rows, byCount)
	require.Equal(t, "bac", order())
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		400 * time.Microsecond:  "0.4ms",
		12 * time.Millisecond:   "12ms",
		1500 * time.Millisecond: "1.5s",
		123 * time.Second:       "2m3s",
	} {
		require.Equal(t, want, formatDuration(d))
	}
}
