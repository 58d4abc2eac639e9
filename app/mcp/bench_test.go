package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/server"
)

// BenchmarkAgentCall is one governed tools/call of a read-only echo tool
// through the per-agent endpoint /mcp (workload token, the tool gateway's
// nine steps, a durable ToolCall record, the gateway's session to the MCP
// server), with parallel callers on one session; see `make bench-mcp` for
// the load test with latency percentiles. The sdk client is the Go SDK's;
// the raw one posts the JSON-RPC request on the session itself, so that
// the profile shows the gateway rather than the client.
func BenchmarkAgentCall(b *testing.B) {
	for name, url := range backends() {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, url(b))
			e.discover()
			tok := e.token(server.LocalTenant, "bot")
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.mcpURL + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{tok, tr}}, DisableStandaloneSSE: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cs.Close() })
			var seq atomic.Int64
			b.Run("sdk", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fake.echo",
							Arguments: map[string]any{"text": fmt.Sprintf("hello %d", seq.Add(1))}})
						if err != nil || res.IsError {
							b.Fatal(err, res)
						}
					}
				})
			})
			b.Run("raw", func(b *testing.B) {
				hc := &http.Client{Transport: tr}
				b.ReportAllocs()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n := seq.Add(1)
						body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fake.echo","arguments":{"text":"hello %d"}}}`, n, n)
						req, _ := http.NewRequest(http.MethodPost, e.mcpURL+"/mcp", bytes.NewBufferString(body))
						req.Header.Set("Authorization", "Bearer "+tok)
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", "application/json, text/event-stream")
						req.Header.Set("Mcp-Session-Id", cs.ID())
						req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
						res, err := hc.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						raw, _ := io.ReadAll(res.Body)
						_ = res.Body.Close()
						if res.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte("hello")) || bytes.Contains(raw, []byte(`"isError":true`)) {
							b.Fatalf("HTTP %d: %s", res.StatusCode, raw)
						}
					}
				})
			})
		})
	}
}
