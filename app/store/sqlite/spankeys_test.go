package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
)

// Retention deletes the keys of the blocks it deletes, though span_keys
// has no index by block: a selector then finds only the blocks left, and
// no key is left behind.
func TestSpanExpireDeletesKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	tenant, other := storetest.NewTenant(), storetest.NewTenant()
	base := time.Unix(1_800_000_000, 0)
	var spans []store.Span
	for i := range 40 {
		trace := storetest.NewTraceID()
		for j := range 3 {
			sp := storetest.NewSpan(trace, [8]byte{}, "s", base.Add(time.Duration(i)*time.Minute+time.Duration(j)*time.Second), time.Millisecond)
			sp.Agent, sp.Tool, sp.Execution = fmt.Sprint("bot", i%3), fmt.Sprint("tool", j), fmt.Sprint("exec-", i)
			spans = append(spans, sp)
		}
	}
	for _, tn := range []string{tenant, other} {
		require.NoError(t, s.SpanWrite(ctx, tn, &store.SpanBatch{Spans: spans}))
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	keys := func(tn string) int {
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM span_keys WHERE tenant_id = ?`, tn).Scan(&n))
		return n
	}
	// A block per trace: an agent, three tools and an execution; more
	// keys than one INSERT statement takes.
	require.Equal(t, 40*5, keys(tenant))

	cut := base.Add(15 * time.Minute)
	for {
		n, err := s.SpanExpire(ctx, tenant, store.TraceCutoffs{Spans: cut}, 4)
		require.NoError(t, err)
		if n < 4 {
			break
		}
	}
	require.Equal(t, 25*5, keys(tenant), "the keys of the 15 blocks deleted are gone")
	require.Equal(t, 40*5, keys(other), "another tenant's keys stay")
	got, err := s.SpanList(ctx, tenant, store.SpanFilter{Tool: "tool1", Agent: "bot1", Status: -1})
	require.NoError(t, err)
	require.Len(t, got, 8, "traces 16, 19, … 37 are left of bot1's")
	for _, sp := range got {
		require.GreaterOrEqual(t, sp.Start, cut.UnixNano())
	}
}
