package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// RouterOptions configures RunRouter.
type RouterOptions struct {
	// Store is the store URL; empty means a fresh SQLite file.
	Store string
	// Duration is the length of each phase.
	Duration time.Duration
	// LowRate and HighRate are the fixed arrival rates of the latency
	// phases (p50 is read at the first, p99 at the second).
	LowRate, HighRate int
	// StreamRate is the rate of the first-chunk phases.
	StreamRate int
	// Concurrency is the number of closed-loop callers at saturation.
	Concurrency int
	// CPUs is the number of CPUs the process is pinned to (PinCPUs, by
	// the caller), which the load generator, the provider and the router
	// share; 0 means every CPU. It is reported only.
	CPUs int
	// CPUProfile, when set, is where a CPU profile of the router's
	// saturation phase is written.
	CPUProfile string
}

// WithDefaults fills in 500 and 2,000 calls/s, 200 streams/s, 10 s
// phases and 32 callers.
func (o RouterOptions) WithDefaults() RouterOptions {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.LowRate <= 0 {
		o.LowRate = 500
	}
	if o.HighRate <= 0 {
		o.HighRate = 2000
	}
	if o.StreamRate <= 0 {
		o.StreamRate = 200
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	return o
}

// providerAnswer is the local provider's chat completion.
const providerAnswer = `{"id":"chatcmpl-bench","object":"chat.completion","created":1764000000,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"The quick brown fox jumps over the lazy dog.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":11,"total_tokens":35}}`

// startProvider serves a local OpenAI-compatible provider: a fixed chat
// completion, or five chunks when the request streams.
func startProvider() (*http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	stream := []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764000000,"model":"bench-model","choices":[{"index":0,"delta":{"role":"assistant","content":"The"},"finish_reason":null}]}` + "\n\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			for range 4 {
				_, _ = w.Write(stream)
				fl.Flush()
			}
			_, _ = io.WriteString(w, `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":4,"total_tokens":28}}`+"\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, providerAnswer)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	srv.Addr = ln.Addr().String()
	return srv, nil
}

// RunRouter is `warden bench router`: a non-streamed chat completion sent
// to a local provider directly and through the model router in the same
// run (the added p50 at LowRate, the added p99 at HighRate, the
// throughput at saturation) and the first chunk of a streamed answer, on
// the CPUs of the process, shared by the load generator, the provider and
// the router.
func RunRouter(ctx context.Context, o RouterOptions, w io.Writer) ([]Result, error) {
	o = o.WithDefaults()
	prov, err := startProvider()
	if err != nil {
		return nil, err
	}
	defer prov.Close()
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-bench-router-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		storeURL = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.Close() }()
	admin, _, err := server.Bootstrap(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	if admin == "" {
		return nil, errors.New("bench: the store already holds a Warden installation; give the benchmark a fresh database of its own")
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), RouterAddr: "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	lns := make([]net.Listener, 3)
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- srv.ServeAll(sctx, lns[0], lns[1]) }()
	go func() { done <- srv.Router().Serve(sctx, lns[2]) }()
	defer func() {
		cancel()
		<-done
		<-done
		srv.Router().Close()
	}()
	cp, rt := "http://"+lns[0].Addr().String(), "http://"+lns[2].Addr().String()
	if err := apply(ctx, cp, admin, routerFixture("http://"+prov.Addr+"/v1")); err != nil {
		return nil, err
	}
	token, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default",
		Agent: "bench-agent", Environment: "dev", Audience: workload.AudienceModelRouter})
	if err != nil {
		return nil, err
	}
	// At most 4,096 connections to each of provider and router: a phase
	// that falls behind queues its calls in the client (their latency
	// still counts from their scheduled start) instead of running the
	// process out of file descriptors.
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 8192, MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 4096, IdleConnTimeout: time.Minute}}
	const body = `{"model":"bench-agent","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say a pangram."}],"max_tokens":32,"temperature":0}`
	const streamBody = `{"model":"bench-agent","messages":[{"role":"user","content":"Say a pangram."}],"stream":true}`
	direct := func(ctx context.Context) error {
		return chatPost(ctx, client, "http://"+prov.Addr+"/v1/chat/completions", "", body)
	}
	routed := func(ctx context.Context) error { return chatPost(ctx, client, rt+"/v1/chat/completions", token, body) }
	var firsts [2][]time.Duration
	var firstN [2]atomic.Int64
	streamFirst := func(i int, url, tok string) func(context.Context) error {
		return func(ctx context.Context) error {
			d, err := firstChunk(ctx, client, url, tok, streamBody)
			if err == nil {
				if n := firstN[i].Add(1) - 1; int(n) < len(firsts[i]) {
					firsts[i][n] = d
				}
			}
			return err
		}
	}
	for range 500 {
		if err := routed(ctx); err != nil {
			return nil, fmt.Errorf("warm-up call through the router: %w", err)
		}
	}
	var out []Result
	stopProfile := func() {}
	for _, ph := range []struct {
		name string
		fn   func(context.Context) error
		rate int
	}{
		{fmt.Sprintf("direct, %d/s", o.LowRate), direct, o.LowRate},
		{fmt.Sprintf("router, %d/s", o.LowRate), routed, o.LowRate},
		{fmt.Sprintf("direct, %d/s", o.HighRate), direct, o.HighRate},
		{fmt.Sprintf("router, %d/s", o.HighRate), routed, o.HighRate},
		{"direct, saturation", direct, 0},
		{"router, saturation", routed, 0},
		{fmt.Sprintf("direct stream, %d/s", o.StreamRate), streamFirst(0, "http://"+prov.Addr+"/v1/chat/completions", ""), -o.StreamRate},
		{fmt.Sprintf("router stream, %d/s", o.StreamRate), streamFirst(1, rt+"/v1/chat/completions", token), -o.StreamRate},
	} {
		cpu := processCPU()
		var r Result
		switch {
		case ph.rate > 0:
			r = fixedRate(ctx, ph.fn, ph.rate, o.Duration)
		case ph.rate < 0:
			i := 0
			if strings.HasPrefix(ph.name, "router") {
				i = 1
			}
			firsts[i] = make([]time.Duration, int(float64(-ph.rate)*o.Duration.Seconds())+1)
			r = fixedRate(ctx, ph.fn, -ph.rate, o.Duration)
			f := summarize(firsts[i][:min(int(firstN[i].Load()), len(firsts[i]))], 0, r.Elapsed)
			r.P50, r.P99 = f.P50, f.P99
		default:
			if strings.HasPrefix(ph.name, "router") {
				if stopProfile, err = startProfile(o.CPUProfile); err != nil {
					return nil, err
				}
			}
			r = saturate(ctx, ph.fn, o.Concurrency, o.Duration)
			stopProfile()
		}
		r.CPU = processCPU() - cpu
		r.Name = ph.name
		out = append(out, r)
	}
	scheme, _, _ := strings.Cut(storeURL, "://")
	cpus := fmt.Sprintf("all %d CPUs", runtimeCPUs())
	if o.CPUs > 0 {
		cpus = fmt.Sprintf("pinned to %d of %d CPUs", o.CPUs, runtimeCPUs())
	}
	fmt.Fprintf(w, "model router benchmark: store %s, %d-second phases, %s, GOMAXPROCS %d (load generator, provider and router share them)\n",
		scheme, int(o.Duration.Seconds()), cpus, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "%-24s %10s %10s %10s %10s %10s %8s\n", "phase", "calls", "calls/s", "p50", "p99", "cpu/call", "errors")
	for _, r := range out {
		fmt.Fprintf(w, "%-24s %10d %10.0f %10s %10s %10s %8d\n", r.Name, r.Calls, r.PerSecond(), ms(r.P50), ms(r.P99), us(r.CPUPerCall()), r.Errors)
	}
	fmt.Fprintf(w, "added p50 at %d/s: %s; added p99 at %d/s: %s; through the router at saturation: %.0f calls/s; first chunk added p50: %s (p99 %s)\n",
		o.LowRate, us(out[1].P50-out[0].P50), o.HighRate, us(out[3].P99-out[2].P99), out[5].PerSecond(), us(out[7].P50-out[6].P50), us(out[7].P99-out[6].P99))
	fmt.Fprintf(w, "router CPU per call at saturation: %s (router, its recorder and store; the provider's and client's share subtracted)\n",
		us(out[5].CPUPerCall()-out[4].CPUPerCall()))
	return out, nil
}

// chatPost sends a chat completion and checks the answer.
func chatPost(ctx context.Context, c *http.Client, url, token, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"chat.completion"`) {
		return fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, b)
	}
	return nil
}

// firstChunk streams a chat completion and returns when its first data
// line arrived; it reads the rest of the stream.
func firstChunk(ctx context.Context, c *http.Client, url, token, body string) (time.Duration, error) {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	var first time.Duration
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "data: ") && first == 0 {
			first = time.Since(t0)
		}
		if strings.HasPrefix(line, "data: [DONE]") {
			return first, nil
		}
		if err != nil {
			return 0, fmt.Errorf("stream ended before [DONE]: %w", err)
		}
	}
}

// routerFixture is the benchmark's tenant: a Model at the local provider
// and an agent routed to it.
func routerFixture(endpoint string) string {
	return `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: bench-model}
spec:
  provider: local
  model: bench-model
  endpoint: "` + endpoint + `"
  capabilities: {toolUse: true, streaming: true, contextWindow: 128000}
  cost: {inputPerMillion: 1, outputPerMillion: 2}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bench-agent}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: bench-model}
`
}
