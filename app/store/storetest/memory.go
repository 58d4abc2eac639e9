package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

// memInsert stores items in one Update.
func memInsert(t testing.TB, s store.Store, tenant string, items ...store.MemoryItem) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for _, it := range items {
			if _, err := tx.MemoryItemInsert(ctx, it); err != nil {
				return err
			}
		}
		return nil
	}))
}

// memQuery runs q in a View and returns the ids, newest first.
func memQuery(t testing.TB, s store.Store, tenant string, q store.MemoryQuery) []string {
	t.Helper()
	var ids []string
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		items, err := r.MemoryItemQuery(ctx, q)
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		return err
	}))
	return ids
}

func memUpdate(t testing.TB, s store.Store, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	t.Helper()
	return s.Update(context.Background(), tenant, fn)
}

// testMemoryItems covers insert, the query filters, order and round trip.
func testMemoryItems(t *testing.T, s store.Store) {
	tenant := NewTenant()
	base := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	exp := base.Add(time.Hour)
	items := []store.MemoryItem{
		{ID: "i1", Namespace: "default", Memory: "notes", Agent: "a", Conversation: "c1", Text: "first",
			Metadata: map[string]any{"kind": "fact", "n": float64(1), "ok": true}, CreatedAt: base},
		{ID: "i2", Namespace: "default", Memory: "notes", Agent: "a", Conversation: "c2", Text: "second",
			Metadata: map[string]any{"kind": "plan", "n": float64(2), "ok": false}, CreatedAt: base.Add(time.Second), ExpiresAt: &exp},
		{ID: "i3", Namespace: "default", Memory: "notes", Agent: "b", Text: "third",
			Metadata: map[string]any{"kind": "fact", "n": "1", "nested": map[string]any{"x": "y"}}, CreatedAt: base.Add(2 * time.Second)},
		{ID: "i4", Namespace: "default", Memory: "other", Agent: "a", Text: "elsewhere", CreatedAt: base.Add(3 * time.Second)},
		{ID: "i5", Namespace: "team", Memory: "notes", Agent: "a", Text: "other namespace", CreatedAt: base.Add(4 * time.Second)},
	}
	memInsert(t, s, tenant, items...)

	// Round trip of every field.
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		got, err := r.MemoryItemQuery(ctx, store.MemoryQuery{Namespace: "default", Memory: "notes", Conversation: "c2", Now: base})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, items[1].Text, got[0].Text)
		require.Equal(t, "a", got[0].Agent)
		require.Equal(t, "c2", got[0].Conversation)
		require.Equal(t, items[1].Metadata, got[0].Metadata)
		require.True(t, got[0].CreatedAt.Equal(items[1].CreatedAt), "createdAt %s", got[0].CreatedAt)
		require.NotNil(t, got[0].ExpiresAt)
		require.True(t, got[0].ExpiresAt.Equal(exp))
		require.False(t, got[0].Summary)
		return nil
	}))

	q := func(mod func(*store.MemoryQuery)) store.MemoryQuery {
		m := store.MemoryQuery{Namespace: "default", Memory: "notes", Now: base}
		if mod != nil {
			mod(&m)
		}
		return m
	}
	tests := []struct {
		name string
		q    store.MemoryQuery
		want []string
	}{
		{"all newest first", q(nil), []string{"i3", "i2", "i1"}},
		{"agent", q(func(m *store.MemoryQuery) { m.Agent = "a" }), []string{"i2", "i1"}},
		{"conversation", q(func(m *store.MemoryQuery) { m.Conversation = "c1" }), []string{"i1"}},
		{"metadata string", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"kind": "fact"} }), []string{"i3", "i1"}},
		{"metadata number is not its string", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"n": float64(1)} }), []string{"i1"}},
		{"metadata string is not its number", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"n": "1"} }), []string{"i3"}},
		{"metadata bool", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"ok": false} }), []string{"i2"}},
		{"metadata two keys", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"kind": "fact", "ok": true} }), []string{"i1"}},
		{"metadata missing key", q(func(m *store.MemoryQuery) { m.Metadata = map[string]any{"absent": "x"} }), nil},
		{"since", q(func(m *store.MemoryQuery) { m.Since = base.Add(time.Second) }), []string{"i3", "i2"}},
		{"before", q(func(m *store.MemoryQuery) { m.Before = base.Add(time.Second) }), []string{"i1"}},
		{"limit", q(func(m *store.MemoryQuery) { m.Limit = 2 }), []string{"i3", "i2"}},
		{"expired at now", q(func(m *store.MemoryQuery) { m.Now = exp }), []string{"i3", "i1"}},
		{"other memory", q(func(m *store.MemoryQuery) { m.Memory = "other" }), []string{"i4"}},
		{"other namespace", q(func(m *store.MemoryQuery) { m.Namespace = "team" }), []string{"i5"}},
		{"unknown memory", q(func(m *store.MemoryQuery) { m.Memory = "none" }), nil},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, memQuery(t, s, tenant, tc.q), tc.name)
	}

	// Another tenant sees nothing.
	require.Empty(t, memQuery(t, s, NewTenant(), q(nil)))

	// A taken id is refused; the same id in another memory is fine.
	err := memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.MemoryItemInsert(ctx, store.MemoryItem{ID: "i1", Namespace: "default", Memory: "notes", Text: "dup"})
		return err
	})
	require.ErrorIs(t, err, store.ErrAlreadyExists)
	memInsert(t, s, tenant, store.MemoryItem{ID: "i1", Namespace: "default", Memory: "fresh", Text: "ok"})

	// Bad arguments are refused.
	require.Error(t, memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.MemoryItemInsert(ctx, store.MemoryItem{Namespace: "default", Memory: "notes", Text: "no id"})
		return err
	}))
	require.Error(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		_, err := r.MemoryItemQuery(ctx, store.MemoryQuery{Namespace: "default", Memory: "notes", Metadata: map[string]any{"bad key'": "x"}})
		return err
	}))
}

// testMemoryDelete covers delete by id, restricted to an agent.
func testMemoryDelete(t *testing.T, s store.Store) {
	tenant := NewTenant()
	memInsert(t, s, tenant,
		store.MemoryItem{ID: "x", Namespace: "default", Memory: "m", Agent: "a", Text: "x"},
		store.MemoryItem{ID: "y", Namespace: "default", Memory: "m", Agent: "b", Text: "y"})
	del := func(tn string, k store.MemoryItemKey) error {
		return memUpdate(t, s, tn, func(ctx context.Context, tx store.Tx) error { return tx.MemoryItemDelete(ctx, k) })
	}
	require.ErrorIs(t, del(tenant, store.MemoryItemKey{Namespace: "default", Memory: "m", ID: "y", Agent: "a"}), store.ErrNotFound,
		"agent a cannot delete b's item")
	require.ErrorIs(t, del(NewTenant(), store.MemoryItemKey{Namespace: "default", Memory: "m", ID: "x"}), store.ErrNotFound,
		"another tenant cannot delete it")
	require.ErrorIs(t, del(tenant, store.MemoryItemKey{Namespace: "default", Memory: "other", ID: "x"}), store.ErrNotFound)
	require.NoError(t, del(tenant, store.MemoryItemKey{Namespace: "default", Memory: "m", ID: "x", Agent: "a"}))
	require.NoError(t, del(tenant, store.MemoryItemKey{Namespace: "default", Memory: "m", ID: "y"}))
	require.ErrorIs(t, del(tenant, store.MemoryItemKey{Namespace: "default", Memory: "m", ID: "y"}), store.ErrNotFound)
	require.Empty(t, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m"}))
}

// testMemoryPurge covers deleting every item of one memory: the memory's
// other namespaces, the tenant's other memories and other tenants keep
// theirs, and a rolled-back purge deletes nothing.
func testMemoryPurge(t *testing.T, s store.Store) {
	tenant, other := NewTenant(), NewTenant()
	items := []store.MemoryItem{
		{ID: "x", Namespace: "default", Memory: "m", Agent: "a", Text: "x"},
		{ID: "y", Namespace: "default", Memory: "m", Agent: "b", Text: "y"},
		{ID: "z", Namespace: "default", Memory: "kept", Text: "z"},
		{ID: "w", Namespace: "team", Memory: "m", Text: "w"},
	}
	memInsert(t, s, tenant, items...)
	memInsert(t, s, other, items[0])
	purge := func(tn string, rollback bool) (int, error) {
		var n int
		err := memUpdate(t, s, tn, func(ctx context.Context, tx store.Tx) error {
			var err error
			if n, err = tx.MemoryPurge(ctx, "default", "m"); err != nil {
				return err
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		return n, err
	}
	_, err := purge(tenant, true)
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, []string{"y", "x"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m"}),
		"a rolled-back purge deletes nothing")
	n, err := purge(tenant, false)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m", IncludeSummarized: true}))
	require.Equal(t, []string{"z"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "kept"}))
	require.Equal(t, []string{"w"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "team", Memory: "m"}))
	require.Equal(t, []string{"x"}, memQuery(t, s, other, store.MemoryQuery{Namespace: "default", Memory: "m"}),
		"another tenant's memory of the same name keeps its items")
	n, err = purge(tenant, false)
	require.NoError(t, err)
	require.Zero(t, n, "purging an empty memory deletes nothing")
}

// testMemoryTrim covers expiry and the item cap.
func testMemoryTrim(t *testing.T, s store.Store) {
	tenant := NewTenant()
	base := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	soon := base.Add(time.Minute)
	var items []store.MemoryItem
	for i := range 10 {
		it := store.MemoryItem{ID: fmt.Sprintf("i%02d", i), Namespace: "default", Memory: "m", Text: "t", CreatedAt: base.Add(time.Duration(i) * time.Second)}
		if i == 9 {
			it.ExpiresAt = &soon
		}
		items = append(items, it)
	}
	memInsert(t, s, tenant, items...)
	memInsert(t, s, tenant, store.MemoryItem{ID: "keep", Namespace: "default", Memory: "other", Text: "t", CreatedAt: base})
	trim := func(tr store.MemoryTrim) int {
		var n int
		require.NoError(t, memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.MemoryItemTrim(ctx, tr)
			return err
		}))
		return n
	}
	require.Zero(t, trim(store.MemoryTrim{Namespace: "default", Memory: "m", Now: base}), "nothing expired, no cap")
	// i09 expires; then only the newest 4 of the rest stay.
	require.Equal(t, 1+5, trim(store.MemoryTrim{Namespace: "default", Memory: "m", Now: soon, Keep: 4}))
	require.Equal(t, []string{"i08", "i07", "i06", "i05"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m", Now: base}))
	require.Zero(t, trim(store.MemoryTrim{Namespace: "default", Memory: "m", Now: soon, Keep: 4}))
	require.Equal(t, []string{"keep"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "other"}), "another memory is untouched")
	require.Error(t, memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.MemoryItemTrim(ctx, store.MemoryTrim{Namespace: "default", Memory: "m", Keep: -1})
		return err
	}))
}

// testMemoryCompact covers marking and deleting summarized items.
func testMemoryCompact(t *testing.T, s store.Store) {
	tenant := NewTenant()
	base := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		memInsert(t, s, tenant, store.MemoryItem{ID: fmt.Sprint("i", i), Namespace: "default", Memory: "m", Text: "t",
			CreatedAt: base.Add(time.Duration(i) * time.Second)})
	}
	memInsert(t, s, tenant, store.MemoryItem{ID: "sum", Namespace: "default", Memory: "m", Text: "summary", Summary: true,
		CreatedAt: base.Add(time.Minute)})
	compact := func(c store.MemoryCompact) int {
		var n int
		require.NoError(t, memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.MemoryItemCompact(ctx, c)
			return err
		}))
		return n
	}
	require.Equal(t, 2, compact(store.MemoryCompact{Namespace: "default", Memory: "m", IDs: []string{"i0", "i1", "absent"}, SummaryID: "sum"}))
	require.Zero(t, compact(store.MemoryCompact{Namespace: "default", Memory: "m", IDs: []string{"i0"}, SummaryID: "sum2"}), "marked once")
	require.Equal(t, []string{"sum", "i3", "i2"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m"}))
	require.Equal(t, []string{"i3", "i2"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m", ExcludeSummaries: true}))
	require.Equal(t, []string{"sum", "i3", "i2", "i1", "i0"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m", IncludeSummarized: true}))
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		got, err := r.MemoryItemQuery(ctx, store.MemoryQuery{Namespace: "default", Memory: "m", IncludeSummarized: true, Before: base.Add(time.Second + time.Microsecond)})
		require.Len(t, got, 2)
		require.Equal(t, "sum", got[0].SummarizedInto)
		return err
	}))
	require.Equal(t, 2, compact(store.MemoryCompact{Namespace: "default", Memory: "m", IDs: []string{"i2", "i3"}, Delete: true}))
	require.Equal(t, []string{"sum", "i1", "i0"}, memQuery(t, s, tenant, store.MemoryQuery{Namespace: "default", Memory: "m", IncludeSummarized: true}))
	require.Zero(t, compact(store.MemoryCompact{Namespace: "default", Memory: "m", Delete: true}))
	require.Error(t, memUpdate(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.MemoryItemCompact(ctx, store.MemoryCompact{Namespace: "default", Memory: "m", IDs: []string{"i0"}})
		return err
	}), "marking needs the summary id")
}
