package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// callEvents returns the types of the persisted events about a call, in
// order.
func callEvents(t *testing.T, st store.Store, call string) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		evs, err := r.EventList(ctx, 0, 1000)
		for _, ev := range evs {
			if ev.Subject == "ToolCall/"+call {
				out = append(out, ev.Type)
			}
		}
		return err
	}))
	return out
}

// lookupFixture adds crm.lookup, crm.search without redaction (its result
// needs no audit record), to the agent of fixture.
func lookupFixture(url string) string {
	return strings.ReplaceAll(`apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: crm.lookup}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "TOOLS/search"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools:
    - name: crm.lookup
    - name: crm.search
    - name: ops.fail
  policies: [guard]
`, "TOOLS", url)
}

// A read-only call with nothing to wait for is recorded once, with its
// result, after its tool ran (where the store reads a claim cheaply): one durable write holding the claim, the
// finished record and the events of both the request and the result. A
// repeat with the same key finds the claim before the tool runs and is
// answered with the recorded call, the tool not called again.
func TestReadOnlyCallIsRecordedOnceWithItsResult(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, st, log := loggedEnv(t, url(t))
			ts := e.tools
			e.apply(lookupFixture(ts.URL))
			log.take()

			r := e.call("crm.lookup", map[string]any{"query": "once"}, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "Succeeded", r.phase())
			if st.ClaimReadFirst() {
				require.Equal(t, []string{"record durable"}, log.take(), "one write for the record and its result")
			} else {
				require.Equal(t, []string{"record committed", "result durable"}, log.take(), "the claim first, where a read costs as much")
			}
			require.Equal(t, 1, ts.count("/search"))

			got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+r.name(), e.bot(), nil, nil)
			require.Equal(t, http.StatusOK, got.status, string(got.raw))
			require.JSONEq(t, string(r.raw), string(got.raw), "the answer is the stored record")
			status := got.body["status"].(map[string]any)
			require.Equal(t, "Succeeded", status["phase"])
			require.NotEmpty(t, status["startedAt"])
			require.NotEmpty(t, status["completedAt"])
			require.Equal(t, "once", got.output()["query"])
			var steps []string
			for _, s := range status["steps"].([]any) {
				steps = append(steps, s.(map[string]any)["name"].(string))
			}
			require.Equal(t, []string{"1.resolve", "2.authenticate", "3.classify", "4.policy", "5.record", "6.trace", "7.invoke", "8.result", "9.output"}, steps)
			require.Equal(t, []string{events.ToolCallRequested, events.ToolCallCompleted}, callEvents(t, st, r.name()))

			// The same input again: the derived key is held.
			again := e.call("crm.lookup", map[string]any{"query": "once"}, nil)
			require.Equal(t, http.StatusOK, again.status, string(again.raw))
			require.Equal(t, r.name(), again.name())
			require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
			require.Equal(t, 1, ts.count("/search"), "a repeated key does not call the tool")
			if st.ClaimReadFirst() {
				require.Empty(t, log.take(), "a replay reads the claim and writes nothing")
			}
			log.take()

			// A caller's key, on a different input.
			k := map[string]string{"Idempotency-Key": "read-1"}
			a := e.call("crm.lookup", map[string]any{"query": "first"}, k)
			b := e.call("crm.lookup", map[string]any{"query": "first"}, k)
			require.Equal(t, a.name(), b.name())
			require.Equal(t, "true", b.header.Get("Idempotent-Replayed"))
			require.Equal(t, 2, ts.count("/search"))
			log.take()

			// A result that redaction changed is recorded in two writes
			// (its audit record goes with the result), as complete, and
			// replayed the same way.
			red := e.call("crm.search", map[string]any{"query": "redacted"}, nil)
			require.Equal(t, http.StatusOK, red.status, string(red.raw))
			require.Equal(t, "[REDACTED:EMAIL]", red.output()["contact"])
			require.Equal(t, []string{"record committed"}, log.take(), "then the result in a transaction of its own")
			require.Equal(t, []string{events.ToolCallRequested, events.ToolCallCompleted, events.HookDecision}, callEvents(t, st, red.name()))
			stored := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+red.name(), e.bot(), nil, nil)
			require.Equal(t, "[REDACTED:EMAIL]", stored.output()["contact"], "the stored result is the redacted one")
			redAgain := e.call("crm.search", map[string]any{"query": "redacted"}, nil)
			require.Equal(t, red.name(), redAgain.name())
			require.Equal(t, 3, ts.count("/search"))

			// A failed read releases its key: the retry reads again.
			f := e.call("ops.fail", map[string]any{"query": "x"}, nil)
			require.Equal(t, http.StatusBadGateway, f.status, string(f.raw))
			require.Equal(t, []string{events.ToolCallRequested, events.ToolCallCompleted}, callEvents(t, st, f.header.Get("Warden-Tool-Call")))
			f2 := e.call("ops.fail", map[string]any{"query": "x"}, nil)
			require.Equal(t, http.StatusBadGateway, f2.status, string(f2.raw))
			require.NotEqual(t, f.header.Get("Warden-Tool-Call"), f2.header.Get("Warden-Tool-Call"))
			require.Equal(t, 2, ts.count("/fail"))
		})
	}
}

// gate is a read-only tool that answers only once n calls reached it, so
// that n identical calls are all past the read of the claim before any
// is recorded.
type gate struct {
	*httptest.Server
	n       int32
	arrived atomic.Int32
	open    chan struct{}
	once    sync.Once
}

func newGate(t *testing.T, n int32) *gate {
	g := &gate{n: n, open: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.arrived.Add(1) >= g.n {
			g.once.Do(func() { close(g.open) })
		}
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"stock": 3})
	}))
	t.Cleanup(g.Close)
	return g
}

// Identical read-only calls that race past the read of the claim may
// each run the tool (it has no side effect), but one record wins and
// every caller is answered with it.
func TestRacingReadOnlyCallsShareOneRecord(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			if !e.st.ClaimReadFirst() {
				t.Skip("the store claims before the tool runs: identical calls never race past the claim")
			}
			const n = 4
			g := newGate(t, n)
			e.apply(strings.ReplaceAll(`apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: stock.level}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "GATE/level"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools:
    - name: stock.level
  policies: [guard]
`, "GATE", g.URL))
			results := make([]resp, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { results[i] = e.call("stock.level", map[string]any{"sku": "a-1"}, nil) })
			}
			wg.Wait()
			require.EqualValues(t, n, g.arrived.Load(), "every call ran the read before any was recorded")
			replayed := 0
			for _, r := range results {
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
				require.Equal(t, "Succeeded", r.phase())
				require.Equal(t, results[0].name(), r.name(), "every caller is answered with the one record")
				require.InDelta(t, 3, r.output()["stock"], 0)
				if r.header.Get("Idempotent-Replayed") == "true" {
					replayed++
				}
			}
			require.Equal(t, n-1, replayed)
			list := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls?tool=stock.level", nil)
			require.Equal(t, http.StatusOK, list.status, string(list.raw))
			require.Len(t, list.body["items"], 1, "one record")
			require.Equal(t, []string{events.ToolCallRequested, events.ToolCallCompleted}, callEvents(t, e.st, results[0].name()))
		})
	}
}

// lostWrite is a store whose next tool-call write fails before it commits,
// as a crash of the gateway between the tool and its record would leave it.
type lostWrite struct {
	store.Store
	fail atomic.Bool
}

func (s *lostWrite) WriteCalls(ctx context.Context, tenant string, ws []*store.CallWrite, durable bool) error {
	if s.fail.CompareAndSwap(true, false) {
		return errors.New("connection lost")
	}
	return s.Store.WriteCalls(ctx, tenant, ws, durable)
}

// A read-only call whose record is lost after its tool ran leaves nothing
// behind: no record, no claim. The tool changed nothing, so the agent's
// retry simply reads again and is recorded.
func TestReadOnlyCallLostBeforeItsRecordLeavesNothing(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, err := backend.Open(context.Background(), url(t), backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			if !st.ClaimReadFirst() {
				t.Skip("the store claims before the tool runs: a lost claim stops the call before its tool")
			}
			lost := &lostWrite{Store: st}
			ts := newToolServer(t)
			e := start(t, envOptions{st: lost, tools: ts})
			e.apply(fixture(ts.URL))
			e.apply(lookupFixture(ts.URL))

			lost.fail.Store(true)
			r := e.call("crm.lookup", map[string]any{"query": "lost"}, nil)
			require.Equal(t, http.StatusInternalServerError, r.status, string(r.raw))
			require.NotContains(t, string(r.raw), "jane.doe", "no result without a record")
			require.False(t, lost.fail.Load(), "the write was attempted and lost")
			require.Equal(t, 1, ts.count("/search"))
			list := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls?tool=crm.lookup", nil)
			require.Empty(t, list.body["items"], "nothing was recorded")

			retry := e.call("crm.lookup", map[string]any{"query": "lost"}, nil)
			require.Equal(t, http.StatusOK, retry.status, string(retry.raw))
			require.Empty(t, retry.header.Get("Idempotent-Replayed"), "no claim was left behind")
			require.Equal(t, 2, ts.count("/search"), "the retry reads again")
			require.Equal(t, []string{events.ToolCallRequested, events.ToolCallCompleted}, callEvents(t, st, retry.name()))
		})
	}
}
