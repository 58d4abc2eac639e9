package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestDemoToolsCommand starts `warden demo tools` on a free port, calls
// it, and stops it the way Ctrl-C does.
func TestDemoToolsCommand(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- RunWith(ctx, Env{Stdout: out, Now: time.Now}, []string{"warden", "demo", "tools", "--listen", "127.0.0.1:0"})
	}()
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !listening.MatchString(out.String()) {
		require.True(t, time.Now().Before(deadline), "the demo tools did not start:\n%s", out)
		time.Sleep(5 * time.Millisecond)
	}
	base := listening.FindStringSubmatch(out.String())[1]
	require.Contains(t, out.String(), "change their spec.rest.url to "+base)

	res, err := http.Post(base+"/refunds", "application/json", strings.NewReader(`{"chargeId":"ch_1","amount":12.5}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.JSONEq(t, `{"refundId":"re_0001","chargeId":"ch_1","amount":12.5,"status":"succeeded"}`, string(body))
	require.Contains(t, out.String(), "refund executed #1: 12.50 USD on charge ch_1 (re_0001)  [called directly, not through Warden]")

	cancel()
	require.Equal(t, ExitOK, <-done)
	require.Contains(t, out.String(), "Demo tools stopped.")
}

func TestDemoToolsUsage(t *testing.T) {
	t.Parallel()
	fx := &fixture{home: t.TempDir()}
	res := fx.run(t, nil, "", "demo", "tools", "--listen", "nonsense")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, `--listen "nonsense"`)
}

func TestDemoTools(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	srv := httptest.NewServer(newDemoTools(out, func() time.Time { return time.Date(2026, 1, 1, 9, 30, 0, 0, time.UTC) }))
	t.Cleanup(srv.Close)
	do := func(method, path, body string, header map[string]string) (int, map[string]any) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = res.Body.Close() }()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	viaWarden := map[string]string{"Warden-Tool-Call": "tc-01abc", "Idempotency-Key": "3bc98efe94608cd09c13d793f04260107cbd"}

	tests := []struct {
		name       string
		method     string
		path, body string
		wantStatus int
		want       map[string]any
		wantLine   string
	}{
		{name: "index", method: "GET", path: "/", wantStatus: 200, want: map[string]any{"service": "warden demo tools"}},
		{
			name: "search carries e-mail addresses", method: "POST", path: "/tickets/search", body: `{"query":"CHARGED"}`, wantStatus: 200,
			want:     map[string]any{"count": float64(1)},
			wantLine: `09:30:00  ticket search #2: query "CHARGED", 1 ticket(s) found  [tc-01abc, idempotency key 3bc98efe9460…]`,
		},
		{name: "search by GET query", method: "GET", path: "/tickets/search?status=new", wantStatus: 200, want: map[string]any{"count": float64(1)}, wantLine: "ticket search #3"},
		{name: "refund", method: "POST", path: "/refunds", body: `{"chargeId":"ch_9","amount":49.9}`, wantStatus: 200, want: map[string]any{"refundId": "re_0001"}, wantLine: "refund executed #1: 49.90 USD on charge ch_9 (re_0001)"},
		{name: "second refund counts on", method: "POST", path: "/refunds", body: `{"chargeId":"ch_9","amount":5}`, wantStatus: 200, want: map[string]any{"refundId": "re_0002"}, wantLine: "refund executed #2"},
		{name: "refund without an amount", method: "POST", path: "/refunds", body: `{"chargeId":"ch_9"}`, wantStatus: 400},
		{name: "reply", method: "POST", path: "/tickets/reply", body: `{"ticketId":1042,"body":"Sorry!"}`, wantStatus: 200, want: map[string]any{"replyId": "rp_0001", "status": "sent"}, wantLine: "reply sent #1: ticket 1042"},
		{name: "issue", method: "POST", path: "/issues", body: `{"title":"Checkout broken"}`, wantStatus: 201, want: map[string]any{"number": float64(1)}, wantLine: `issue created #1: "Checkout broken"`},
		{name: "not JSON", method: "POST", path: "/issues", body: `title=x`, wantStatus: 400},
		{name: "wrong method", method: "GET", path: "/refunds", wantStatus: 405},
		{name: "unknown path", method: "POST", path: "/nope", wantStatus: 404},
	}
	_, found := do("POST", "/tickets/search", `{"query":"charged"}`, nil)
	tickets, _ := found["tickets"].([]any)
	require.Len(t, tickets, 1)
	require.Equal(t, "jane.doe@example.com", tickets[0].(map[string]any)["requester"].(map[string]any)["email"],
		"the raw answer carries the e-mail address that the gateway redacts")
	require.Contains(t, out.String(), "ticket search #1: query \"charged\", 1 ticket(s) found  [called directly, not through Warden]")

	// The counters are shared: the rows run in order.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(tt.method, tt.path, tt.body, viaWarden)
			require.Equal(t, tt.wantStatus, status, "%v", body)
			for k, v := range tt.want {
				require.Equal(t, v, body[k], "%v", body)
			}
			if tt.wantLine != "" {
				require.Contains(t, out.String(), tt.wantLine)
			}
		})
	}
	require.NotContains(t, out.String(), "@example", "the log holds no customer data")
}

// TestDemoMCPStdio runs `warden demo mcp --stdio` with its stdin and
// stdout connected to the Go SDK's client: it lists the tools, calls one
// (printed on stderr, never on stdout, which carries the protocol) and
// exits once stdin closes.
func TestDemoMCPStdio(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		code := RunWith(t.Context(), Env{Stdin: inR, Stdout: outW, Stderr: stderr, Now: time.Now}, []string{"warden", "demo", "mcp", "--stdio"})
		_ = outW.Close()
		done <- code
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	require.Equal(t, "warden-demo-docs", cs.InitializeResult().ServerInfo.Name)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.ElementsMatch(t, []string{"search_docs", "delete_page"}, names)
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "pins"}})
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, "pins an MCP server's version")
	require.Contains(t, stderr.String(), `search_docs "pins"`)
	require.NoError(t, cs.Close())
	require.Equal(t, ExitOK, <-done, stderr.String())
}
