package bench

import (
	"bufio"
	"bytes"
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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/listener"
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
	// CPUs is the number of CPUs the child serving the provider and the
	// router is pinned to (the first CPUs of the process; the load
	// generator takes the others); 0 leaves both unpinned.
	CPUs int
	// CPUProfile, when set, is where the child writes a CPU profile of
	// the router's saturation phase.
	CPUProfile string
	// Trace, when set, is where the child writes an execution trace of
	// the router's phase at HighRate.
	Trace string
	// Phases names the pairs of phases (direct and through the router)
	// to run, from RouterPhases; empty runs them all.
	Phases []string
	// ChildArgs are the arguments that run this program as the child
	// (ServeRouterChild); RunRouter adds --cpus and --store.
	ChildArgs []string
}

// RouterPhases are the pairs of phases of RunRouter, in the order they
// run: at LowRate (added p50), at HighRate (added p99), at saturation
// (calls/s) and streamed (first chunk).
var RouterPhases = []string{"low", "high", "saturation", "stream"}

// CheckPhases returns an error naming the first of phases that is not one
// of RouterPhases.
func (o RouterOptions) CheckPhases() error {
	for _, p := range o.Phases {
		if !slices.Contains(RouterPhases, p) {
			return fmt.Errorf("unknown phase %q: want some of %s", p, strings.Join(RouterPhases, ", "))
		}
	}
	return nil
}

// runs reports whether phase (of RouterPhases) is to run.
func (o RouterOptions) runs(phase string) bool {
	return len(o.Phases) == 0 || slices.Contains(o.Phases, phase)
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

// startProvider serves a local OpenAI-compatible provider on Fiber
// (fasthttp): a fixed chat completion, or five chunks, each flushed as it
// is written, when the request streams. It is the same provider for the
// direct and the routed call; a lean server leaves more of the core they
// share to the router.
func startProvider() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("provider: %w", err)
	}
	chunk := []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764000000,"model":"bench-model","choices":[{"index":0,"delta":{"role":"assistant","content":"The"},"finish_reason":null}]}` + "\n\n")
	last := []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":4,"total_tokens":28}}` + "\n\ndata: [DONE]\n\n")
	streams := []byte(`"stream":true`)
	// Idle connections outlive the load generator's (a minute), so the
	// server never closes one the client is about to reuse.
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute})
	app.Use(listener.Recover(stderrLog()))
	app.Post("/v1/chat/completions", func(c *fiber.Ctx) error {
		if !bytes.Contains(c.Body(), streams) {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.SendString(providerAnswer)
		}
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			for range 4 {
				_, _ = w.Write(chunk)
				if w.Flush() != nil {
					return
				}
			}
			_, _ = w.Write(last)
			_ = w.Flush()
		})
		return nil
	})
	go func() { _ = app.Listener(ln) }()
	return ln.Addr().String(), func() { _ = app.Shutdown() }, nil
}

// routerHello is what the child serving the router tells the load
// generator: where the provider and the router listen, and the agent's
// workload token.
type routerHello struct {
	Provider string `json:"provider"`
	Router   string `json:"router"`
	Token    string `json:"token"`
	Procs    int    `json:"procs"`
	// WarmCalls went through the router before it answered, until it had
	// collected twice (Warmed) or the warm-up's time was up.
	WarmCalls int64 `json:"warmCalls"`
	Warmed    bool  `json:"warmed"`
}

// ServeRouterChild is the child side of `warden bench router`: on the
// CPUs its caller pinned it to, it serves the local provider and a
// private Warden with the model router (store o.Store, default a fresh
// SQLite file), routes the agent to the provider, sends 500 calls through
// the router to warm it, says where they listen on out (routerHello as
// one JSON line) and answers the load generator's commands from in:
// "cpu" (the process's user and system time, in nanoseconds),
// "cpuprofile <path>" / "trace <path>" (start a CPU profile or execution
// trace) and "stop" (end it). It returns when in ends.
func ServeRouterChild(ctx context.Context, o RouterOptions, in io.Reader, out io.Writer) error {
	provAddr, stopProvider, err := startProvider()
	if err != nil {
		return err
	}
	defer stopProvider()
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-bench-router-")
		if err != nil {
			return fmt.Errorf("store directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		storeURL = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return fmt.Errorf("open the store: %w", err)
	}
	defer func() { _ = st.Close() }()
	admin, _, err := server.Bootstrap(ctx, st, nil)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if admin == "" {
		return errors.New("bench: the store already holds a Warden installation; give the benchmark a fresh database of its own")
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), RouterAddr: "127.0.0.1:0"})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	lns := make([]net.Listener, 3)
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("listen: %w", err)
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
	if err := apply(ctx, cp, admin, routerFixture("http://"+provAddr+"/v1")); err != nil {
		return err
	}
	token, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default",
		Agent: "bench-agent", Environment: "dev", Audience: workload.AudienceModelRouter})
	if err != nil {
		return fmt.Errorf("workload token: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	warmCalls, warmed, err := warm(ctx, func(ctx context.Context) error {
		return chatPost(ctx, client, rt+"/v1/chat/completions", token, routerBenchBody)
	}, localCycles)
	if err != nil {
		return fmt.Errorf("warm-up through the router: %w", err)
	}
	client.CloseIdleConnections()
	stop := func() {}
	defer func() { stop() }()
	hello := routerHello{Provider: "http://" + provAddr, Router: rt, Token: token, Procs: runtime.GOMAXPROCS(0),
		WarmCalls: warmCalls, Warmed: warmed}
	return serveChild(ctx, in, out, hello, func(_ context.Context, command string) (string, error) {
		verb, arg, _ := strings.Cut(command, " ")
		switch verb {
		case "cpu":
			return strconv.FormatInt(int64(processCPU()), 10), nil
		case "cpuprofile", "trace":
			stop()
			s, err := startCapture(verb, arg)
			if err != nil {
				stop = func() {}
				return "", err
			}
			stop = s
			return "ok", nil
		case "stop":
			stop()
			stop = func() {}
			return "ok", nil
		}
		return "", fmt.Errorf("unknown command %q", command)
	})
}

// The benchmark's chat completions, non-streamed and streamed.
const (
	routerBenchBody       = `{"model":"bench-agent","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say a pangram."}],"max_tokens":32,"temperature":0}`
	routerBenchStreamBody = `{"model":"bench-agent","messages":[{"role":"user","content":"Say a pangram."}],"stream":true}`
)

// RunRouter is `warden bench router`: a non-streamed chat completion sent
// to a local provider directly and through the model router in the same
// run (the added p50 at LowRate, the added p99 at HighRate, the
// throughput at saturation) and the first chunk of a streamed answer.
// The provider and the router run in a child process (o.ChildArgs, which
// runs ServeRouterChild) pinned to the first o.CPUs CPUs; the load
// generator runs here, pinned to the CPUs left (or beside the child when
// none are). The CPU per call is the child's: the provider's alone when
// called directly, the provider's and the router's through the router.
func RunRouter(ctx context.Context, o RouterOptions, w io.Writer) ([]Result, error) {
	o = o.WithDefaults()
	// The child pins itself to the first o.CPUs CPUs of those it inherits,
	// so it starts before this process confines itself to the others.
	args := append(slices.Clone(o.ChildArgs), "--cpus", strconv.Itoa(o.CPUs), "--store", o.Store)
	var hello routerHello
	ch, err := startChild(ctx, args, &hello)
	if err != nil {
		return nil, err
	}
	layout := "child unpinned, load generator beside it"
	if o.CPUs > 0 {
		restore, left, err := pinOtherCPUs(o.CPUs)
		if err != nil {
			_ = ch.close()
			return nil, err
		}
		defer restore()
		layout = fmt.Sprintf("child (provider and router) pinned to %d of %d CPUs, load generator on the other %d", o.CPUs, runtimeCPUs(), left)
		if left == 0 {
			layout = fmt.Sprintf("child (provider and router) pinned to %d of %d CPUs, load generator unpinned (no CPU left for it)", o.CPUs, runtimeCPUs())
		}
		runtime.SetDefaultGOMAXPROCS()
	}
	defer func() { _ = ch.close() }()
	childCPU := func() (time.Duration, error) {
		a, err := ch.ask("cpu")
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(a, 10, 64)
		return time.Duration(n), err
	}
	// At most 4,096 connections to each of provider and router: a phase
	// that falls behind queues its calls in the client (their latency
	// still counts from their scheduled start) instead of running the
	// process out of file descriptors.
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 8192, MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 4096, IdleConnTimeout: time.Minute}}
	prov, rt, token := hello.Provider, hello.Router, hello.Token
	direct := func(ctx context.Context) error {
		return chatPost(ctx, client, prov+"/v1/chat/completions", "", routerBenchBody)
	}
	routed := func(ctx context.Context) error {
		return chatPost(ctx, client, rt+"/v1/chat/completions", token, routerBenchBody)
	}
	var firsts [2][]time.Duration
	var firstN [2]atomic.Int64
	streamFirst := func(i int, url, tok string) func(context.Context) error {
		return func(ctx context.Context) error {
			d, err := firstChunk(ctx, client, url, tok, routerBenchStreamBody)
			if err == nil {
				if n := firstN[i].Add(1) - 1; int(n) < len(firsts[i]) {
					firsts[i][n] = d
				}
			}
			return err
		}
	}
	// Warm the load generator's connections and heap, and the direct
	// path, as the child warmed the router.
	directWarm, directWarmed, err := warm(ctx, direct, localCycles)
	if err != nil {
		return nil, fmt.Errorf("warm-up to the provider: %w", err)
	}
	phases := []struct {
		name    string
		group   string
		fn      func(context.Context) error
		rate    int
		capture string
	}{
		{fmt.Sprintf("direct, %d/s", o.LowRate), "low", direct, o.LowRate, ""},
		{fmt.Sprintf("router, %d/s", o.LowRate), "low", routed, o.LowRate, ""},
		{fmt.Sprintf("direct, %d/s", o.HighRate), "high", direct, o.HighRate, ""},
		{fmt.Sprintf("router, %d/s", o.HighRate), "high", routed, o.HighRate, "trace " + o.Trace},
		{"direct, saturation", "saturation", direct, 0, ""},
		{"router, saturation", "saturation", routed, 0, "cpuprofile " + o.CPUProfile},
		{fmt.Sprintf("direct stream, %d/s", o.StreamRate), "stream", streamFirst(0, prov+"/v1/chat/completions", ""), -o.StreamRate, ""},
		{fmt.Sprintf("router stream, %d/s", o.StreamRate), "stream", streamFirst(1, rt+"/v1/chat/completions", token), -o.StreamRate, ""},
	}
	// out and gen hold a result for every phase, zero for those not run.
	out := make([]Result, len(phases))
	gen := make([]time.Duration, len(phases))
	for i, ph := range phases {
		if !o.runs(ph.group) {
			continue
		}
		if _, path, _ := strings.Cut(ph.capture, " "); path != "" {
			if _, err := ch.ask(ph.capture); err != nil {
				return nil, err
			}
		}
		cpu, err := childCPU()
		if err != nil {
			return nil, err
		}
		own := processCPU()
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
			r = saturate(ctx, ph.fn, o.Concurrency, o.Duration)
		}
		gen[i] = processCPU() - own
		after, err := childCPU()
		if err != nil {
			return nil, err
		}
		r.CPU = after - cpu
		if _, path, _ := strings.Cut(ph.capture, " "); path != "" {
			if _, err := ch.ask("stop"); err != nil {
				return nil, err
			}
		}
		r.Name = ph.name
		out[i] = r
	}
	scheme, _, _ := strings.Cut(o.Store, "://")
	if scheme == "" {
		scheme = "sqlite"
	}
	fmt.Fprintf(w, "model router benchmark: store %s, %d-second phases, %s; child GOMAXPROCS %d, load generator GOMAXPROCS %d\n",
		scheme, int(o.Duration.Seconds()), layout, hello.Procs, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "warm-up, not measured: %d calls through the router (%s), %d direct (%s)\n",
		hello.WarmCalls, warmedNote(hello.Warmed), directWarm, warmedNote(directWarmed))
	fmt.Fprintf(w, "%-24s %10s %10s %10s %10s %10s %10s %8s\n", "phase", "calls", "calls/s", "p50", "p99", "cpu/call", "gen/call", "errors")
	var ran []Result
	for i, r := range out {
		if r.Name == "" {
			continue
		}
		ran = append(ran, r)
		g := time.Duration(0)
		if r.Calls > 0 {
			g = gen[i] / time.Duration(r.Calls)
		}
		fmt.Fprintf(w, "%-24s %10d %10.0f %10s %10s %10s %10s %8d\n", r.Name, r.Calls, r.PerSecond(), ms(r.P50), ms(r.P99), us(r.CPUPerCall()), us(g), r.Errors)
	}
	fmt.Fprintf(w, "cpu/call: the child's (provider; and router, with its recorder and store, through the router); gen/call: the load generator's\n")
	added := func(i int) time.Duration { return out[i+1].CPUPerCall() - out[i].CPUPerCall() }
	var figures, cpu []string
	if o.runs("low") {
		figures = append(figures, fmt.Sprintf("added p50 at %d/s: %s", o.LowRate, us(out[1].P50-out[0].P50)))
	}
	if o.runs("high") {
		figures = append(figures, fmt.Sprintf("added p99 at %d/s: %s", o.HighRate, us(out[3].P99-out[2].P99)))
	}
	if o.runs("saturation") {
		figures = append(figures, fmt.Sprintf("through the router at saturation: %.0f calls/s", out[5].PerSecond()))
		cpu = append(cpu, us(added(4))+" at saturation")
	}
	if o.runs("stream") {
		figures = append(figures, fmt.Sprintf("first chunk added p50: %s (p99 %s)", us(out[7].P50-out[6].P50), us(out[7].P99-out[6].P99)))
	}
	if o.runs("low") {
		cpu = append(cpu, fmt.Sprintf("%s at %d/s", us(added(0)), o.LowRate))
	}
	if o.runs("high") {
		cpu = append(cpu, fmt.Sprintf("%s at %d/s", us(added(2)), o.HighRate))
	}
	fmt.Fprintf(w, "%s\n", strings.Join(figures, "; "))
	if len(cpu) > 0 {
		fmt.Fprintf(w, "router CPU per call: %s (the child's CPU per call through the router less the direct call's)\n", strings.Join(cpu, ", "))
	}
	return ran, nil
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
