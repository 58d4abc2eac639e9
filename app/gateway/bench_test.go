package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkGovernedCall is one governed call through the gateway over HTTP
// (authentication, manifest check, 1 policy, idempotency claim, durable
// record, REST tool), with parallel callers; see `make bench-gateway` for
// the load test with latency percentiles.
func BenchmarkGovernedCall(b *testing.B) {
	for name, url := range backends() {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, url(b))
			tok := e.bot()
			var seq atomic.Int64
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := fmt.Sprintf(`{"tool":"tickets.create","input":{"title":"t%d"}}`, seq.Add(1))
					req, _ := http.NewRequest(http.MethodPost, e.gwURL+"/v1/tool-calls", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+tok)
					req.Header.Set("Content-Type", "application/json")
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					// Drained, so the connection is reused (an
					// undrained body made every call dial anew).
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Fatalf("HTTP %d", res.StatusCode)
					}
				}
			})
		})
	}
}
