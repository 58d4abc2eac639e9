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

func (s *batchLog) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches
	s.batches = nil
	return b
}

// A read-only call's record is acted on once committed: its tool has no
// side effect a crash could repeat, and its result, which the agent waits
// for, is committed durably after it (which makes the record durable
// too). A call with a side effect runs only on a durable record.
func TestOnlyReadOnlyCallsRunOnACommittedRecord(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, err := backend.Open(context.Background(), url(t), backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			log := &batchLog{Store: st}
			ts := newToolServer(t)
			e := start(t, envOptions{st: log, tools: ts})
			e.apply(fixture(ts.URL))
			log.take()

			// (Its tool answers 500: the call fails, and is recorded.)
			r := e.call("ops.fail", map[string]any{"query": "durability"}, nil)
			require.Equal(t, http.StatusBadGateway, r.status, string(r.raw))
			require.Equal(t, "ToolFailed", r.code())
			require.Equal(t, []string{"record committed", "result durable"}, log.take(), "read_only")

			r = e.call("tickets.create", map[string]any{"title": "durability"}, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "Succeeded", r.phase())
			require.Equal(t, []string{"record durable", "result durable"}, log.take(), "external_write")

			// Awaiting approval, the 202 is an answer: the record is durable.
			r = e.call("payments.refund", map[string]any{"amount": 10}, nil)
			require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
			require.Equal(t, []string{"record durable"}, log.take(), "financial, awaiting approval")
		})
	}
}
