package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// batchLog is a real store that remembers, for each batch of tool-call
// writes, whether it held a call's record (a claim) or its result (a
// status update), and whether its commit was durable.
type batchLog struct {
	store.Store
	mu      sync.Mutex
	batches []string
}

func (s *batchLog) WriteCalls(ctx context.Context, tenant string, ws []*store.CallWrite, durable bool) error {
	kind := "result"
	if ws[0].Claim != nil {
		kind = "record"
	}
	if durable {
		kind += " durable"
	} else {
		kind += " committed"
	}
	s.mu.Lock()
	s.batches = append(s.batches, kind)
	s.mu.Unlock()
	return s.Store.WriteCalls(ctx, tenant, ws, durable)
}

// loggedEnv is newEnv on a store whose tool-call batches are logged; it
// returns the store under the log too.
func loggedEnv(t *testing.T, url string) (*env, store.Store, *batchLog) {
	t.Helper()
	st, err := backend.Open(context.Background(), url, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	log := &batchLog{Store: st}
	ts := newToolServer(t)
	e := start(t, envOptions{st: log, tools: ts})
	e.apply(fixture(ts.URL))
	log.take()
	return e, st, log
}

func (s *batchLog) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches
	s.batches = nil
	return b
}

// A read-only call's record is written with its result, durably, or, when
// the result needs an audit record, committed before the result's write:
// its tool has no side effect a crash could repeat, and the agent is
// answered only once its result is durable. A call with a side effect runs
// only on a durable record.
func TestOnlyReadOnlyCallsRunOnACommittedRecord(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, st, log := loggedEnv(t, url(t))

			// (Its tool answers 500: the call fails, and is recorded.) A
			// read-only call is recorded once, with its result, durably,
			// where reading its claim first is cheap (SQLite).
			r := e.call("ops.fail", map[string]any{"query": "durability"}, nil)
			require.Equal(t, http.StatusBadGateway, r.status, string(r.raw))
			require.Equal(t, "ToolFailed", r.code())
			if st.ClaimReadFirst() {
				require.Equal(t, []string{"record durable"}, log.take(), "read_only")
			} else {
				require.Equal(t, []string{"record committed", "result durable"}, log.take(), "read_only")
			}

			// With a result that needs an audit record (redaction found
			// an address), its record is written first, committed, and
			// the result after it, durably.
			r = e.call("crm.search", map[string]any{"query": "durability"}, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, []string{"record committed"}, log.take(), "read_only with findings")

			r = e.call("tickets.create", map[string]any{"title": "durability"}, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "Succeeded", r.phase())
			require.Equal(t, []string{"record durable", "result durable"}, log.take(), "external_write")

			// A function tool runs in the agent, which acts on the hook's
			// answer: the record is durable before the answer.
			ctx := `"context": {"agent": {"id": "bot", "name": "bot", "url": "http://agent.local", "instructions": "help", "version": "1", "provider": {"name": "acme", "url": "https://acme.example"}}, "session": {"id": "s-1"}, "turnId": "t1", "stepId": "st1", "timestamp": "2026-11-23T10:00:00Z"}`
			r = do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), `{"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest", "params": {`+ctx+
				`, "toolCallRequest": {"executionId": "ex-durable", "toolId": "local.lookup", "inputs": [{"name": "customer", "value": "c-1"}]}}}`, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "allow", r.body["result"].(map[string]any)["decision"], string(r.raw))
			require.Equal(t, []string{"record durable"}, log.take(), "read_only function tool")

			// Awaiting approval, the 202 is an answer: the record is durable.
			r = e.call("payments.refund", map[string]any{"amount": 10}, nil)
			require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
			require.Equal(t, []string{"record durable"}, log.take(), "financial, awaiting approval")
		})
	}
}
