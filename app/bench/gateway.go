// Package bench measures Warden end to end. RunGateway is `warden bench
// gateway` (make bench-gateway): it drives a loopback REST tool directly
// and through a real tool gateway (every call authenticated, decided by
// policy, deduplicated and durably recorded as a ToolCall) and prints the
// throughput and latency of both and the difference.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// Options configures RunGateway.
type Options struct {
	// Store is the store URL; empty means a fresh SQLite file in a
	// temporary directory.
	Store string
	// Rate is the fixed arrival rate of the latency phase, calls/s.
	Rate int
	// Duration is the length of each phase.
	Duration time.Duration
	// Concurrency is the number of closed-loop callers of the
	// saturation phase.
	Concurrency int
	// Rules is the number of policy rules evaluated on every call (none
	// fires, so the decision is allow).
	Rules int
	// CPUProfile, when set, is where a CPU profile of the gateway's
	// saturation phase is written.
	CPUProfile string
	// Steps, when set, traces every governed call and prints the p50,
	// p99 and maximum duration of each step of the gateway's fixed-rate
	// phase (tracing costs a little: compare builds without it).
	Steps bool
	// Trace, when set, is where a Go execution trace of the gateway's
	// fixed-rate phase is written (go tool trace): which goroutine ran on
	// which processor, and every wait, system call and collection.
	Trace string
	// FixedRateOnly skips the saturation phases: the latency figures
	// alone, in half the time (for runs that alternate two builds).
	FixedRateOnly bool
}

// WithDefaults fills in the defaults: 1000 calls/s, 10s, 64 callers, 20
// rules.
func (o Options) WithDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.Rules <= 0 {
		o.Rules = 20
	}
	return o
}

// Result is one measured phase.
type Result struct {
	Name     string
	Calls    int
	Errors   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	// CPU is the processor time (user and system) the whole process
	// spent during the phase: load generator, tool and gateway.
	CPU time.Duration
}

// PerSecond is the achieved throughput.
func (r Result) PerSecond() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// CPUPerCall is the process's processor time per call. Unlike latency, it
// barely moves when other work shares the machine.
func (r Result) CPUPerCall() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Calls)
}

// RunGateway runs the four phases (direct and gateway, at the fixed rate
// and at saturation; the first two alone with FixedRateOnly) and writes a
// table to w.
func RunGateway(ctx context.Context, o Options, w io.Writer) ([]Result, error) {
	o = o.WithDefaults()
	tool, err := startTool()
	if err != nil {
		return nil, err
	}
	defer tool.Close()
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-bench-")
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
		// Bootstrap hands out the first admin key only once: this store
		// was used before, and its records would mix with the benchmark's.
		return nil, errors.New("bench: the store already holds a Warden installation; give the benchmark a fresh database of its own")
	}
	cfg := server.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	var steps *stepTimes
	if o.Steps {
		steps = newStepTimes()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(steps))
		defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
		cfg.Tracer = tp
	}
	srv, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	defer func() {
		cancel()
		<-done
	}()
	cp, gw := "http://"+ln.Addr().String(), "http://"+gln.Addr().String()
	if err := apply(ctx, cp, admin, fixture(tool.Addr, o.Rules)); err != nil {
		return nil, err
	}
	token, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default",
		Agent: "bench-bot", Environment: "dev", Audience: workload.AudienceToolGateway})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	var seq atomic.Int64
	direct := func(ctx context.Context) error {
		body := fmt.Sprintf(`{"q":%d}`, seq.Add(1))
		return post(ctx, client, "http://"+tool.Addr+"/lookup", "", body)
	}
	governed := func(ctx context.Context) error {
		body := fmt.Sprintf(`{"tool":"bench.lookup","input":{"q":%d}}`, seq.Add(1))
		return post(ctx, client, gw+"/v1/tool-calls", token, body)
	}
	// Warm up connections, caches and the policy programs.
	for range 200 {
		if err := governed(ctx); err != nil {
			return nil, fmt.Errorf("warm-up call through the gateway: %w", err)
		}
	}
	var out []Result
	for _, ph := range []struct {
		name           string
		fn             func(context.Context) error
		rate, governed bool
	}{
		{"direct, fixed rate", direct, true, false},
		{"gateway, fixed rate", governed, true, true},
		{"direct, saturation", direct, false, false},
		{"gateway, saturation", governed, false, true},
	} {
		if o.FixedRateOnly && !ph.rate {
			continue
		}
		// The governed phases alone are traced (fixed rate) or profiled
		// (saturation), when asked.
		stopCapture, err := func() {}, error(nil)
		switch {
		case ph.governed && ph.rate:
			stopCapture, err = startTrace(o.Trace)
		case ph.governed:
			stopCapture, err = startProfile(o.CPUProfile)
		}
		if err != nil {
			return nil, err
		}
		var r Result
		cpu := processCPU()
		if ph.rate {
			traced := steps != nil && ph.governed
			if traced {
				steps.record(true)
			}
			r = fixedRate(ctx, ph.fn, o.Rate, o.Duration)
			if traced {
				steps.record(false)
			}
		} else {
			r = saturate(ctx, ph.fn, o.Concurrency, o.Duration)
		}
		stopCapture()
		r.CPU = processCPU() - cpu
		r.Name = ph.name
		out = append(out, r)
	}
	scheme, _, _ := strings.Cut(storeURL, "://")
	fmt.Fprintf(w, "tool gateway benchmark: store %s, %d policy rules, %d-second phases, %d CPUs\n", scheme, o.Rules, int(o.Duration.Seconds()), runtimeCPUs())
	fmt.Fprintf(w, "%-22s %10s %10s %10s %10s %10s %8s\n", "phase", "calls", "calls/s", "p50", "p99", "cpu/call", "errors")
	for _, r := range out {
		fmt.Fprintf(w, "%-22s %10d %10.0f %10s %10s %10s %8d\n", r.Name, r.Calls, r.PerSecond(), ms(r.P50), ms(r.P99), us(r.CPUPerCall()), r.Errors)
	}
	fmt.Fprintf(w, "added latency at %d calls/s: p50 %s, p99 %s", o.Rate, ms(out[1].P50-out[0].P50), ms(out[1].P99-out[0].P99))
	if len(out) == 4 {
		fmt.Fprintf(w, "; governed throughput at saturation: %.0f calls/s\n", out[3].PerSecond())
		fmt.Fprintf(w, "gateway CPU per call at saturation: %s (this process; a database server's own work is not counted)\n",
			us(out[3].CPUPerCall()-out[2].CPUPerCall()))
	} else {
		fmt.Fprintln(w)
	}
	if steps != nil {
		steps.write(w, out[1].Name)
	}
	return out, nil
}

// startProfile writes a CPU profile of the process to path while the
// gateway's saturation phase (governed) runs; no path, no profile.
func startProfile(path string) (stop func(), err error) {
	return capture(path, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace writes an execution trace of the process to path while the
// gateway's fixed-rate phase runs; no path, no trace.
func startTrace(path string) (stop func(), err error) {
	return capture(path, "execution trace", trace.Start, trace.Stop)
}

// startCapture is startTrace for verb "trace" and startProfile for any
// other: the serving processes' commands and the shared layout pick one
// by name.
func startCapture(verb, path string) (stop func(), err error) {
	if verb == "trace" {
		return startTrace(path)
	}
	return startProfile(path)
}

// capture creates path and runs start on it until the returned stop; no
// path, nothing.
func capture(path, what string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return func() {
		end()
		_ = f.Close()
	}, nil
}

func us(d time.Duration) string { return fmt.Sprintf("%dµs", d.Microseconds()) }

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}

func post(ctx context.Context, c *http.Client, url, token, body string) error {
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
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if token == "" {
		return nil
	}
	// Through the gateway, a call that reached no tool still answers 200
	// with a Failed record: only Succeeded counts.
	var call struct {
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &call); err != nil || call.Status.Phase != "Succeeded" {
		return fmt.Errorf("tool call not Succeeded: %.300s", b)
	}
	return nil
}

// fixedRate sends calls at rate per second for d, each on its own
// goroutine, and measures latency from the call's scheduled start (so a
// stalled server is charged for the calls it delayed).
func fixedRate(ctx context.Context, fn func(context.Context) error, rate int, d time.Duration) Result {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				errs.Add(1)
			}
			lat[i] = time.Since(at)
		}()
	}
	wg.Wait()
	return summarize(lat, int(errs.Load()), time.Since(start))
}

// saturate runs c closed-loop callers for d.
func saturate(ctx context.Context, fn func(context.Context) error, c int, d time.Duration) Result {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t := time.Now()
				if err := fn(ctx); err != nil {
					errs.Add(1)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return summarize(lat, int(errs.Load()), time.Since(start))
}

func summarize(lat []time.Duration, errs int, elapsed time.Duration) Result {
	slices.Sort(lat)
	r := Result{Calls: len(lat), Errors: errs, Elapsed: elapsed}
	if len(lat) > 0 {
		r.P50 = lat[len(lat)*50/100]
		r.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return r
}

// startTool serves the loopback REST tool: it echoes a small JSON answer.
// stderrLog is the logger of the benchmark's own servers: a panic in one
// is recovered (as every listener's) and reported on standard error.
func stderrLog() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stderr, nil)) }

func startTool() (*http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: listener.RecoverHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "q": in["q"], "items": []string{"alpha", "beta"}})
	}), stderrLog()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	srv.Addr = ln.Addr().String()
	return srv, nil
}

func apply(ctx context.Context, cp, key, yaml string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp+"/v1/resources/apply", strings.NewReader(yaml))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("apply the benchmark fixture: HTTP %d: %s", resp.StatusCode, b)
	}
	return nil
}

// fixture is the benchmark's tenant: a read-only REST tool, an agent and a
// policy of n rules that never fire.
func fixture(toolURL string, n int) string {
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
kind: Tool
metadata: {name: bench.lookup}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "http://` + toolURL + `/lookup"}
  inputSchema: {type: object, properties: {q: {type: integer}}}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bench-bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools: [{name: bench.lookup}]
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
