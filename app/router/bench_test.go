package router_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkChat sends one non-streamed chat completion per iteration to
// the local provider directly and through the router (warden bench router
// measures the same under load; docs/performance.md).
func BenchmarkChat(b *testing.B) {
	e := newEnv(b, envOptions{})
	token := e.bot()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const body = `{"messages":[{"role":"user","content":"Say a pangram."}],"max_tokens":32}`
	for _, bc := range []struct{ name, url, token string }{
		{"direct", e.oa.URL + "/v1/chat/completions", ""},
		{"router", e.url + "/v1/chat/completions", token},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, bc.url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if bc.token != "" {
					req.Header.Set("Authorization", "Bearer "+bc.token)
				}
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d", res.StatusCode)
				}
			}
		})
	}
}
