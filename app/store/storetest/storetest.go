package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// OpenFunc opens a store for one test. Tests isolate themselves by using
// fresh tenants, so the function may return stores that share one database;
// it should register its own cleanup with t.Cleanup.
type OpenFunc func(t *testing.T) store.Store

// Run runs the conformance suite against the driver opened by open.
func Run(t *testing.T, open OpenFunc) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"NoTenant", testNoTenant},
		{"CreateGet", testCreateGet},
		{"CreateExisting", testCreateExisting},
		{"NotFound", testNotFound},
		{"UpdateGeneration", testUpdateGeneration},
		{"UpdateNoop", testUpdateNoop},
		{"UpdateConflict", testUpdateConflict},
		{"UpdateStatus", testUpdateStatus},
		{"Delete", testDelete},
		{"ListSelectors", testListSelectors},
		{"ListPaging", testListPaging},
		{"ListPagingSelector", testListPagingSelector},
		{"ContinueInvalid", testContinueInvalid},
		{"ContinueOtherTenant", testContinueOtherTenant},
		{"Changes", testChanges},
		{"ChangesCompact", testChangesCompact},
		{"Listen", testListen},
		{"UpdateRollback", testUpdateRollback},
		{"Events", testEvents},
		{"Audit", testAudit},
		{"AuditHead", testAuditHead},
		{"APIKeys", testAPIKeys},
		{"TenantIsolation", testTenantIsolation},
		{"ConcurrentWriters", testConcurrentWriters},
		{"TenantDirectory", testTenantDirectory},
		{"Members", testMembers},
		{"MembershipsByEmail", testMembershipsByEmail},
		{"MemberIsolation", testMemberIsolation},
		{"Sessions", testSessions},
		{"APIKeyManagement", testAPIKeyManagement},
		{"SigningKeys", testSigningKeys},
		{"MasterKeyFingerprint", testMasterKeyFingerprint},
		{"IdempotencyClaim", testIdempotencyClaim},
		{"IdempotencyHolder", testIdempotencyHolder},
		{"GatewaySweep", testGatewaySweep},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"UsageCharge", testUsageCharge},
		{"RouteDecisions", testRouteDecisions},
		{"RouteDecisionSweep", testRouteDecisionSweep},
		{"RouteEventsInsert", testRouteEventsInsert},
		{"UsageConcurrent", testUsageConcurrent},
		{"GatewayIsolation", testGatewayIsolation},
		{"ListenConfig", testListenConfig},
		{"WriteCalls", testWriteCalls},
		{"WriteCallsCharges", testWriteCallsCharges},
		{"WriteCallsRollback", testWriteCallsRollback},
		{"WriteCallsConcurrent", testWriteCallsConcurrent},
		{"WriteCallsIsolation", testWriteCallsIsolation},
		{"Sync", testSync},
		{"RAG", testRAG},
		{"RAGIsolation", testRAGIsolation},
		{"RecordsPurge", testRecordsPurge},
		{"EventSweep", testEventSweep},
		{"SessionSweep", testSessionSweep},
		{"AuditCut", testAuditCut},
		{"MemoryItems", testMemoryItems},
		{"MemoryDelete", testMemoryDelete},
		{"MemoryPurge", testMemoryPurge},
		{"MemoryTrim", testMemoryTrim},
		{"MemoryCompact", testMemoryCompact},
		{"Deliveries", testDeliveries},
	}
	tests = append(tests, traceTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// NewTenant returns a fresh random tenant id, so tests sharing a database
// never see each other's data.
func NewTenant() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}

// NewObject returns an Agent-like test object.
func NewObject(kind, namespace, name string, labels map[string]string, spec map[string]any) *resource.Object {
	return &resource.Object{
		APIVersion: resource.GroupVersion,
		Kind:       kind,
		Metadata:   resource.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec:       spec,
	}
}

func create(t testing.TB, s store.Store, tenant string, objs ...*resource.Object) []*resource.Object {
	t.Helper()
	var out []*resource.Object
	err := s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for _, o := range objs {
			c, err := tx.ResourceCreate(ctx, o)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func get(t testing.TB, s store.Store, tenant string, key resource.Key) (*resource.Object, error) {
	t.Helper()
	var out *resource.Object
	err := s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.ResourceGet(ctx, key)
		return err
	})
	return out, err
}

func list(t testing.TB, s store.Store, tenant string, p store.ListParams) (*store.ListResult, error) {
	t.Helper()
	var out *store.ListResult
	err := s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.ResourceList(ctx, p)
		return err
	})
	return out, err
}

func update(t testing.TB, s store.Store, tenant string, fn func(ctx context.Context, tx store.Tx) (*resource.Object, error)) (*resource.Object, error) {
	t.Helper()
	var out *resource.Object
	err := s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		out, err = fn(ctx, tx)
		return err
	})
	return out, err
}

func version(t testing.TB, s store.Store, tenant string) int64 {
	t.Helper()
	var rv int64
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		rv, err = r.CurrentVersion(ctx)
		return err
	}))
	return rv
}

func names(objs []*resource.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Metadata.Namespace + "/" + o.Metadata.Name
	}
	return out
}

func testNoTenant(t *testing.T, s store.Store) {
	ctx := context.Background()
	err := s.View(ctx, "", func(context.Context, store.Reader) error { return nil })
	require.ErrorIs(t, err, store.ErrNoTenant)
	err = s.Update(ctx, "", func(context.Context, store.Tx) error { return nil })
	require.ErrorIs(t, err, store.ErrNoTenant)
	_, err = s.ChangesSince(ctx, "", 0, 10)
	require.ErrorIs(t, err, store.ErrNoTenant)
	require.ErrorIs(t, s.ChangesCompact(ctx, "", 1), store.ErrNoTenant)
}

func testCreateGet(t *testing.T, s store.Store) {
	tenant := NewTenant()
	before := time.Now().UTC().Add(-2 * time.Second)
	in := NewObject("Agent", "default", "a1", map[string]string{"team": "x"}, map[string]any{"model": "m1", "n": 3})
	in.Status = map[string]any{"phase": "Pending"}
	got := create(t, s, tenant, in)[0]

	require.Equal(t, "Agent", got.Kind)
	require.Equal(t, int64(1), got.Metadata.Generation)
	require.Len(t, got.Metadata.UID, 36)
	require.Equal(t, byte('4'), got.Metadata.UID[14], "uid is a version 4 UUID")
	rv, err := strconv.ParseInt(got.Metadata.ResourceVersion, 10, 64)
	require.NoError(t, err)
	require.Equal(t, int64(1), rv, "first version of a fresh tenant")
	ts, err := time.Parse(time.RFC3339, got.Metadata.CreationTimestamp)
	require.NoError(t, err)
	require.True(t, ts.After(before), "creationTimestamp %s is recent", got.Metadata.CreationTimestamp)
	require.Empty(t, in.Metadata.UID, "the input is not modified")

	stored, err := get(t, s, tenant, in.Key())
	require.NoError(t, err)
	require.Equal(t, got, stored)
	require.Equal(t, float64(3), stored.Spec["n"])
	require.Equal(t, "Pending", stored.Status["phase"])

	second := create(t, s, tenant, NewObject("Agent", "default", "a2", nil, nil))[0]
	require.Equal(t, "2", second.Metadata.ResourceVersion)
	require.NotEqual(t, got.Metadata.UID, second.Metadata.UID)
	require.Equal(t, int64(2), version(t, s, tenant))

	// Cluster-scoped kinds have an empty namespace.
	ns := create(t, s, tenant, NewObject("Namespace", "", "team-a", nil, nil))[0]
	stored, err = get(t, s, tenant, ns.Key())
	require.NoError(t, err)
	require.Equal(t, ns, stored)

	// Invalid keys are refused.
	_, err = update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceCreate(ctx, NewObject("Agent", "default", "", nil, nil))
	})
	require.Error(t, err)
}

func testCreateExisting(t *testing.T, s store.Store) {
	tenant := NewTenant()
	create(t, s, tenant, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "1"}))
	_, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceCreate(ctx, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "2"}))
	})
	require.ErrorIs(t, err, store.ErrAlreadyExists)

	// The error does not poison the transaction: the caller may go on.
	out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		_, err := tx.ResourceCreate(ctx, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "2"}))
		if !errors.Is(err, store.ErrAlreadyExists) {
			return nil, fmt.Errorf("expected ErrAlreadyExists, got %v", err)
		}
		return tx.ResourceUpdate(ctx, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "2"}))
	})
	require.NoError(t, err)
	require.Equal(t, "2", out.Spec["v"])
	require.Equal(t, "2", out.Metadata.ResourceVersion, "the failed create used no version")

	// Same name in another namespace or kind is a different resource.
	create(t, s, tenant, NewObject("Agent", "other", "a1", nil, nil), NewObject("Tool", "default", "a1", nil, nil))
}

func testNotFound(t *testing.T, s store.Store) {
	tenant := NewTenant()
	key := resource.Key{Kind: "Agent", Namespace: "default", Name: "missing"}
	obj, err := get(t, s, tenant, key)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Nil(t, obj)
	ops := []struct {
		name string
		fn   func(ctx context.Context, tx store.Tx) (*resource.Object, error)
	}{
		{"update", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceUpdate(ctx, NewObject("Agent", "default", "missing", nil, nil))
		}},
		{"status", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceUpdateStatus(ctx, key, map[string]any{"a": "b"}, "")
		}},
		{"delete", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceDelete(ctx, key, "")
		}},
		{"get in tx", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceGet(ctx, key)
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			obj, err := update(t, s, tenant, op.fn)
			require.ErrorIs(t, err, store.ErrNotFound)
			require.Nil(t, obj)
		})
	}
}

func testUpdateGeneration(t *testing.T, s store.Store) {
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "a1", map[string]string{"a": "1"}, map[string]any{"model": "m1"}))[0]
	st, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, orig.Key(), map[string]any{"phase": "Ready"}, "")
	})
	require.NoError(t, err)

	steps := []struct {
		name       string
		labels     map[string]string
		annots     map[string]string
		spec       map[string]any
		generation int64
	}{
		{"spec change", map[string]string{"a": "1"}, nil, map[string]any{"model": "m2"}, 2},
		{"labels only", map[string]string{"a": "2"}, nil, map[string]any{"model": "m2"}, 2},
		{"annotations only", map[string]string{"a": "2"}, map[string]string{"note": "x"}, map[string]any{"model": "m2"}, 2},
		{"spec again", map[string]string{"a": "2"}, map[string]string{"note": "x"}, map[string]any{"model": "m3", "extra": true}, 3},
	}
	prevRV := st.Metadata.ResourceVersion
	for _, step := range steps {
		in := NewObject("Agent", "default", "a1", step.labels, step.spec)
		in.Metadata.Annotations = step.annots
		in.Status = map[string]any{"phase": "Hacked"}
		out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceUpdate(ctx, in)
		})
		require.NoError(t, err, step.name)
		require.Equal(t, step.generation, out.Metadata.Generation, step.name)
		require.NotEqual(t, prevRV, out.Metadata.ResourceVersion, step.name)
		require.Equal(t, "Ready", out.Status["phase"], "%s: update keeps status", step.name)
		require.Equal(t, orig.Metadata.UID, out.Metadata.UID, step.name)
		require.Equal(t, orig.Metadata.CreationTimestamp, out.Metadata.CreationTimestamp, step.name)
		require.Equal(t, step.labels, out.Metadata.Labels, step.name)
		stored, err := get(t, s, tenant, orig.Key())
		require.NoError(t, err)
		require.Equal(t, out, stored, step.name)
		prevRV = out.Metadata.ResourceVersion
	}
}

func testUpdateNoop(t *testing.T, s store.Store) {
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "a1", map[string]string{"a": "1"},
		map[string]any{"model": "m1", "n": 2, "list": []any{"x", map[string]any{"y": 1}}}))[0]
	changes, err := s.ChangesSince(context.Background(), tenant, 0, 100)
	require.NoError(t, err)
	require.Len(t, changes, 1)

	cases := []struct {
		name string
		obj  *resource.Object
	}{
		{"same content", NewObject("Agent", "default", "a1", map[string]string{"a": "1"},
			map[string]any{"n": 2.0, "model": "m1", "list": []any{"x", map[string]any{"y": 1}}})},
		{"with current version", func() *resource.Object { o := orig.DeepCopy(); return o }()},
	}
	for _, tc := range cases {
		out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceUpdate(ctx, tc.obj)
		})
		require.NoError(t, err, tc.name)
		require.Equal(t, orig, out, tc.name)
	}
	out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, orig.Key(), nil, orig.Metadata.ResourceVersion)
	})
	require.NoError(t, err)
	require.Equal(t, orig, out, "status no-op")
	require.Equal(t, int64(1), version(t, s, tenant))
	changes, err = s.ChangesSince(context.Background(), tenant, 0, 100)
	require.NoError(t, err)
	require.Len(t, changes, 1, "no-op updates append no change")
}

func testUpdateConflict(t *testing.T, s store.Store) {
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "1"}))[0]
	next := orig.DeepCopy()
	next.Spec = map[string]any{"v": "2"}
	updated, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdate(ctx, next)
	})
	require.NoError(t, err)

	stale := orig.DeepCopy()
	stale.Spec = map[string]any{"v": "3"}
	cases := []struct {
		name string
		fn   func(ctx context.Context, tx store.Tx) (*resource.Object, error)
	}{
		{"update", func(ctx context.Context, tx store.Tx) (*resource.Object, error) { return tx.ResourceUpdate(ctx, stale) }},
		{"update wrong uid", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			o := updated.DeepCopy()
			o.Metadata.UID = store.NewUID()
			o.Spec = map[string]any{"v": "4"}
			return tx.ResourceUpdate(ctx, o)
		}},
		{"status", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceUpdateStatus(ctx, orig.Key(), map[string]any{"a": "b"}, orig.Metadata.ResourceVersion)
		}},
		{"delete", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceDelete(ctx, orig.Key(), orig.Metadata.ResourceVersion)
		}},
		{"garbage version", func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
			return tx.ResourceDelete(ctx, orig.Key(), "not-a-version")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := update(t, s, tenant, tc.fn)
			require.ErrorIs(t, err, store.ErrConflict)
		})
	}
	stored, err := get(t, s, tenant, orig.Key())
	require.NoError(t, err)
	require.Equal(t, updated, stored)

	// The current version is accepted.
	cur := updated.DeepCopy()
	cur.Spec = map[string]any{"v": "5"}
	out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdate(ctx, cur)
	})
	require.NoError(t, err)
	require.Equal(t, int64(3), out.Metadata.Generation)
}

func testUpdateStatus(t *testing.T, s store.Store) {
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "a1", map[string]string{"l": "1"}, map[string]any{"v": "1"}))[0]
	out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, orig.Key(), map[string]any{"phase": "Ready", "count": 2}, orig.Metadata.ResourceVersion)
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), out.Metadata.Generation, "status never moves generation")
	require.Equal(t, orig.Spec, out.Spec)
	require.Equal(t, orig.Metadata.Labels, out.Metadata.Labels)
	require.Equal(t, "Ready", out.Status["phase"])
	require.NotEqual(t, orig.Metadata.ResourceVersion, out.Metadata.ResourceVersion)

	stored, err := get(t, s, tenant, orig.Key())
	require.NoError(t, err)
	require.Equal(t, "Ready", stored.Status["phase"])
	require.Equal(t, float64(2), stored.Status["count"])

	changes, err := s.ChangesSince(context.Background(), tenant, 0, 10)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	require.Equal(t, store.ChangeModified, changes[1].Type)
	require.Equal(t, "Ready", changes[1].Object.Status["phase"])
}

func testDelete(t *testing.T, s store.Store) {
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "a1", nil, map[string]any{"v": "1"}))[0]
	out, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceDelete(ctx, orig.Key(), orig.Metadata.ResourceVersion)
	})
	require.NoError(t, err)
	require.Equal(t, orig.Metadata.UID, out.Metadata.UID)
	require.Equal(t, "1", out.Spec["v"])
	require.Equal(t, "2", out.Metadata.ResourceVersion)

	_, err = get(t, s, tenant, orig.Key())
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceDelete(ctx, orig.Key(), "")
	})
	require.ErrorIs(t, err, store.ErrNotFound)

	changes, err := s.ChangesSince(context.Background(), tenant, 1, 10)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, store.ChangeDeleted, changes[0].Type)
	require.Equal(t, int64(2), changes[0].ResourceVersion)
	require.Equal(t, out, changes[0].Object)

	// Re-creating gets a new uid and generation 1.
	again := create(t, s, tenant, NewObject("Agent", "default", "a1", nil, nil))[0]
	require.NotEqual(t, orig.Metadata.UID, again.Metadata.UID)
	require.Equal(t, int64(1), again.Metadata.Generation)
}

func testListSelectors(t *testing.T, s store.Store) {
	tenant := NewTenant()
	create(t, s, tenant,
		NewObject("Agent", "prod", "b", map[string]string{"team": "pay", "tier": "1"}, map[string]any{"model": "m1", "replicas": 2}),
		NewObject("Agent", "dev", "a", map[string]string{"team": "pay"}, map[string]any{"model": "m2"}),
		NewObject("Agent", "dev", "c", map[string]string{"team": "ops", "tier": "2"}, map[string]any{"model": "m1"}),
		NewObject("Agent", "prod", "a", nil, map[string]any{"model": "m3", "nested": map[string]any{"on": true}}),
		NewObject("Tool", "dev", "t", map[string]string{"team": "pay"}, nil),
	)
	_, err := update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, resource.Key{Kind: "Agent", Namespace: "dev", Name: "c"}, map[string]any{"phase": "Ready"}, "")
	})
	require.NoError(t, err)

	cases := []struct {
		name      string
		namespace string
		selector  string
		want      []string
	}{
		{"all", "", "", []string{"dev/a", "dev/c", "prod/a", "prod/b"}},
		{"namespace", "prod", "", []string{"prod/a", "prod/b"}},
		{"label equals", "", "team=pay", []string{"dev/a", "prod/b"}},
		{"label not equals", "", "team!=pay", []string{"dev/c", "prod/a"}},
		{"label in", "", "tier in (1,2)", []string{"dev/c", "prod/b"}},
		{"label notin", "", "team notin (pay)", []string{"dev/c", "prod/a"}},
		{"label exists", "", "tier", []string{"dev/c", "prod/b"}},
		{"label absent", "", "!tier", []string{"dev/a", "prod/a"}},
		{"two labels", "", "team=pay,tier=1", []string{"prod/b"}},
		{"field spec", "", "spec.model=m1", []string{"dev/c", "prod/b"}},
		{"field number", "", "spec.replicas=2", []string{"prod/b"}},
		{"field nested bool", "", "spec.nested.on=true", []string{"prod/a"}},
		{"field status", "", "status.phase=Ready", []string{"dev/c"}},
		{"field name", "", "metadata.name=a", []string{"dev/a", "prod/a"}},
		{"field and namespace", "dev", "spec.model=m1", []string{"dev/c"}},
		{"no match", "", "team=nobody", []string{}},
		{"empty namespace", "staging", "", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := resource.ParseSelector(tc.selector)
			require.NoError(t, err)
			res, err := list(t, s, tenant, store.ListParams{Kind: "Agent", Namespace: tc.namespace, Selector: sel})
			require.NoError(t, err)
			require.Equal(t, tc.want, names(res.Items))
			require.Empty(t, res.Continue)
			require.Equal(t, "6", res.ResourceVersion)
		})
	}
	_, err = list(t, s, tenant, store.ListParams{})
	require.Error(t, err, "kind is required")
}

// pageAll lists every page and checks that no page is larger than limit.
func pageAll(t testing.TB, s store.Store, tenant string, p store.ListParams) ([]*resource.Object, int) {
	t.Helper()
	var all []*resource.Object
	pages := 0
	for {
		res, err := list(t, s, tenant, p)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(res.Items), store.PageLimit(p.Limit))
		all = append(all, res.Items...)
		if res.Continue == "" {
			return all, pages
		}
		require.Len(t, res.Items, store.PageLimit(p.Limit), "only the last page may be short")
		p.Continue = res.Continue
		require.Less(t, pages, 10000, "paging does not terminate")
	}
}

func seed(t testing.TB, s store.Store, tenant string, n int, labels func(i int) map[string]string) []string {
	t.Helper()
	var want []string
	objs := make([]*resource.Object, 0, n)
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%3)
		name := fmt.Sprintf("agent-%04d", i)
		objs = append(objs, NewObject("Agent", ns, name, labels(i), map[string]any{"i": i}))
		want = append(want, ns+"/"+name)
	}
	create(t, s, tenant, objs...)
	sort.Strings(want)
	return want
}

func testListPaging(t *testing.T, s store.Store) {
	tenant := NewTenant()
	want := seed(t, s, tenant, 250, func(int) map[string]string { return nil })
	cases := []struct {
		name  string
		limit int
		pages int
	}{
		{"default limit", 0, 3},
		{"limit 7", 7, 36},
		{"limit 50 exact", 50, 5},
		{"limit 249", 249, 2},
		{"limit 250", 250, 1},
		{"over max", 5000, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all, pages := pageAll(t, s, tenant, store.ListParams{Kind: "Agent", Limit: tc.limit})
			require.Equal(t, want, names(all), "no duplicates or gaps")
			require.Equal(t, tc.pages, pages)
		})
	}

	// A write between pages is seen when it lands after the cursor.
	moving := NewTenant()
	seed(t, s, moving, 60, func(int) map[string]string { return nil })
	res, err := list(t, s, moving, store.ListParams{Kind: "Agent", Namespace: "ns-0", Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, res.Continue)
	create(t, s, moving, NewObject("Agent", "ns-0", "zzz", nil, nil), NewObject("Agent", "ns-0", "aaa", nil, nil))
	rest, _ := pageAll(t, s, moving, store.ListParams{Kind: "Agent", Namespace: "ns-0", Limit: 10, Continue: res.Continue})
	got := names(rest)
	require.Equal(t, "ns-0/zzz", got[len(got)-1])
	require.NotContains(t, got, "ns-0/aaa")
}

func testListPagingSelector(t *testing.T, s store.Store) {
	tenant := NewTenant()
	all := seed(t, s, tenant, 600, func(i int) map[string]string {
		if i%7 == 0 {
			return map[string]string{"pick": "yes"}
		}
		return map[string]string{"pick": "no"}
	})
	var want []string
	for _, n := range all {
		var i int
		_, err := fmt.Sscanf(n[len(n)-4:], "%d", &i)
		require.NoError(t, err)
		if i%7 == 0 {
			want = append(want, n)
		}
	}
	sel, err := resource.ParseSelector("pick=yes")
	require.NoError(t, err)
	for _, limit := range []int{1, 5, 86, 500} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			got, _ := pageAll(t, s, tenant, store.ListParams{Kind: "Agent", Selector: sel, Limit: limit})
			require.Equal(t, want, names(got))
		})
	}
	nsSel, err := resource.ParseSelector("pick=yes,spec.i notin (0)")
	require.NoError(t, err)
	got, _ := pageAll(t, s, tenant, store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: nsSel, Limit: 3})
	for _, o := range got {
		require.Equal(t, "ns-1", o.Metadata.Namespace)
		require.Equal(t, "yes", o.Metadata.Labels["pick"])
	}
	require.NotEmpty(t, got)
}

func testContinueInvalid(t *testing.T, s store.Store) {
	tenant := NewTenant()
	seed(t, s, tenant, 20, func(int) map[string]string { return map[string]string{"a": "b"} })
	sel, err := resource.ParseSelector("a=b")
	require.NoError(t, err)
	other, err := resource.ParseSelector("a!=c")
	require.NoError(t, err)
	res, err := list(t, s, tenant, store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Limit: 2})
	require.NoError(t, err)
	tok := res.Continue
	require.NotEmpty(t, tok)

	tampered := []byte(tok)
	tampered[3] ^= 0x01
	cases := []struct {
		name   string
		params store.ListParams
	}{
		{"garbage", store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Continue: "%%%not base64"}},
		{"no tag", store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Continue: "eyJrIjoiQWdlbnQifQ"}},
		{"tampered", store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Continue: string(tampered)}},
		{"truncated", store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Continue: tok[:len(tok)-2]}},
		{"other kind", store.ListParams{Kind: "Tool", Namespace: "ns-1", Selector: sel, Continue: tok}},
		{"other namespace", store.ListParams{Kind: "Agent", Namespace: "ns-2", Selector: sel, Continue: tok}},
		{"all namespaces", store.ListParams{Kind: "Agent", Selector: sel, Continue: tok}},
		{"other selector", store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: other, Continue: tok}},
		{"no selector", store.ListParams{Kind: "Agent", Namespace: "ns-1", Continue: tok}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := list(t, s, tenant, tc.params)
			require.ErrorIs(t, err, store.ErrInvalidContinue)
		})
	}
	// The genuine token still works with a different page size.
	_, err = list(t, s, tenant, store.ListParams{Kind: "Agent", Namespace: "ns-1", Selector: sel, Limit: 3, Continue: tok})
	require.NoError(t, err)
}

func testContinueOtherTenant(t *testing.T, s store.Store) {
	a, b := NewTenant(), NewTenant()
	seed(t, s, a, 10, func(int) map[string]string { return nil })
	seed(t, s, b, 10, func(int) map[string]string { return nil })
	res, err := list(t, s, a, store.ListParams{Kind: "Agent", Limit: 3})
	require.NoError(t, err)
	require.NotEmpty(t, res.Continue)
	_, err = list(t, s, b, store.ListParams{Kind: "Agent", Limit: 3, Continue: res.Continue})
	require.ErrorIs(t, err, store.ErrInvalidContinue)
}

func testChanges(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	changes, err := s.ChangesSince(ctx, tenant, 0, 10)
	require.NoError(t, err)
	require.Empty(t, changes)

	a := create(t, s, tenant, NewObject("Agent", "default", "a", nil, map[string]any{"v": "1"}))[0]
	_, err = update(t, s, tenant, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		if _, err := tx.ResourceCreate(ctx, NewObject("Tool", "default", "b", nil, nil)); err != nil {
			return nil, err
		}
		in := a.DeepCopy()
		in.Spec["v"] = "2"
		if _, err := tx.ResourceUpdate(ctx, in); err != nil {
			return nil, err
		}
		return tx.ResourceDelete(ctx, resource.Key{Kind: "Tool", Namespace: "default", Name: "b"}, "")
	})
	require.NoError(t, err)

	changes, err = s.ChangesSince(ctx, tenant, 0, 100)
	require.NoError(t, err)
	var got []string
	for i, c := range changes {
		require.Equal(t, int64(i+1), c.ResourceVersion)
		require.Equal(t, store.FormatVersion(c.ResourceVersion), c.Object.Metadata.ResourceVersion)
		got = append(got, c.Type+" "+c.Object.Kind+"/"+c.Object.Metadata.Name)
	}
	require.Equal(t, []string{"ADDED Agent/a", "ADDED Tool/b", "MODIFIED Agent/a", "DELETED Tool/b"}, got)
	require.Equal(t, "2", changes[2].Object.Spec["v"])

	limited, err := s.ChangesSince(ctx, tenant, 1, 2)
	require.NoError(t, err)
	require.Len(t, limited, 2)
	require.Equal(t, int64(2), limited[0].ResourceVersion)
	tail, err := s.ChangesSince(ctx, tenant, 4, 10)
	require.NoError(t, err)
	require.Empty(t, tail)
}

func testChangesCompact(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	seed(t, s, tenant, 10, func(int) map[string]string { return nil })
	require.NoError(t, s.ChangesCompact(ctx, tenant, 3))

	cases := []struct {
		after int64
		want  int
		gone  bool
	}{
		{0, 0, true},
		{6, 0, true},
		{7, 3, false},
		{9, 1, false},
		{10, 0, false},
	}
	for _, tc := range cases {
		changes, err := s.ChangesSince(ctx, tenant, tc.after, 100)
		if tc.gone {
			require.ErrorIs(t, err, store.ErrGone, "after %d", tc.after)
			continue
		}
		require.NoError(t, err, "after %d", tc.after)
		require.Len(t, changes, tc.want, "after %d", tc.after)
	}
	// Compacting less than retained never moves the floor back.
	require.NoError(t, s.ChangesCompact(ctx, tenant, 100))
	_, err := s.ChangesSince(ctx, tenant, 6, 100)
	require.ErrorIs(t, err, store.ErrGone)
	// Another tenant keeps its history.
	other := NewTenant()
	seed(t, s, other, 2, func(int) map[string]string { return nil })
	changes, err := s.ChangesSince(ctx, other, 0, 100)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	// Compacting everything leaves resumption from the newest version.
	require.NoError(t, s.ChangesCompact(ctx, tenant, 0))
	changes, err = s.ChangesSince(ctx, tenant, 10, 100)
	require.NoError(t, err)
	require.Empty(t, changes)
	_, err = s.ChangesSince(ctx, tenant, 9, 100)
	require.ErrorIs(t, err, store.ErrGone)

	// A history longer than a chunk is compacted chunk after chunk, to
	// the floor the first chunk set.
	long := NewTenant()
	n := 2*store.CompactChunk + 500
	seed(t, s, long, n, func(int) map[string]string { return nil })
	require.NoError(t, s.ChangesCompact(ctx, long, 5))
	_, err = s.ChangesSince(ctx, long, int64(n-6), 100)
	require.ErrorIs(t, err, store.ErrGone)
	changes, err = s.ChangesSince(ctx, long, int64(n-5), 100)
	require.NoError(t, err)
	require.Len(t, changes, 5)
}

// recorder collects Listen callbacks for one tenant set.
type recorder struct {
	mu     sync.Mutex
	counts map[string]int
	signal chan string
}

func newRecorder() *recorder {
	return &recorder{counts: map[string]int{}, signal: make(chan string, 1024)}
}

func (r *recorder) fn(tenant string) {
	r.mu.Lock()
	r.counts[tenant]++
	r.mu.Unlock()
	select {
	case r.signal <- tenant:
	default:
	}
}

func (r *recorder) count(tenant string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[tenant]
}

// waitFor waits until the recorder heard tenant.
func (r *recorder) waitFor(t *testing.T, tenant string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for r.count(tenant) == 0 {
		select {
		case <-r.signal:
		case <-timeout:
			t.Fatalf("Listen was not called for tenant %s", tenant)
		}
	}
}

func testListen(t *testing.T, s store.Store) {
	ctx := context.Background()
	rolledBack, committed, quiet := NewTenant(), NewTenant(), NewTenant()
	rec := newRecorder()
	stop := s.Listen(rec.fn)
	defer stop()

	// When a callback runs, the commit it reports is visible.
	visible := make(chan int, 1)
	stopVisible := s.Listen(func(tenant string) {
		if tenant != committed {
			return
		}
		changes, err := s.ChangesSince(ctx, committed, 0, 100)
		if err == nil {
			select {
			case visible <- len(changes):
			default:
			}
		}
	})
	defer stopVisible()

	// A slow listener never blocks the writer.
	block := make(chan struct{})
	stopSlow := s.Listen(func(string) { <-block })
	defer stopSlow()
	defer close(block)

	err := s.Update(ctx, rolledBack, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ResourceCreate(ctx, NewObject("Agent", "default", "a", nil, nil)); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	require.Error(t, err)
	// Writes that append no change do not notify either.
	require.NoError(t, s.Update(ctx, quiet, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.EventInsert(ctx, events.Event{Type: events.ResourceApplied})
		return err
	}))
	for i := range 5 {
		create(t, s, committed, NewObject("Agent", "default", fmt.Sprint("a", i), nil, nil))
	}
	rec.waitFor(t, committed)
	select {
	case n := <-visible:
		require.Positive(t, n, "the callback saw the committed change")
	case <-time.After(10 * time.Second):
		t.Fatal("no callback for the committed tenant")
	}
	require.Zero(t, rec.count(rolledBack), "no callback after rollback")
	require.Zero(t, rec.count(quiet), "no callback without a change")

	// A listener stopped before a commit never hears it.
	stopped := newRecorder()
	stopStopped := s.Listen(stopped.fn)
	stopStopped()
	later := NewTenant()
	create(t, s, later, NewObject("Agent", "default", "after-stop", nil, nil))
	rec.waitFor(t, later)
	require.Zero(t, stopped.count(later), "no callback after stop")
	stopStopped() // stopping twice is harmless
}

func testUpdateRollback(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	create(t, s, tenant, NewObject("Agent", "default", "keep", nil, map[string]any{"v": "1"}))
	boom := errors.New("boom")
	err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for i := range 3 {
			if _, err := tx.ResourceCreate(ctx, NewObject("Agent", "default", fmt.Sprint("new-", i), nil, nil)); err != nil {
				return err
			}
		}
		if _, err := tx.ResourceUpdate(ctx, NewObject("Agent", "default", "keep", nil, map[string]any{"v": "2"})); err != nil {
			return err
		}
		if _, err := tx.EventInsert(ctx, events.Event{Type: events.ResourceApplied}); err != nil {
			return err
		}
		if _, err := tx.AuditInsert(ctx, audit.Record{Actor: "u", Verb: "apply", Outcome: audit.OutcomeAllowed}); err != nil {
			return err
		}
		// Reads inside the transaction see its own writes.
		res, err := tx.ResourceList(ctx, store.ListParams{Kind: "Agent"})
		if err != nil {
			return err
		}
		if len(res.Items) != 4 || res.ResourceVersion != "5" {
			return fmt.Errorf("in-tx list: %d items at %s", len(res.Items), res.ResourceVersion)
		}
		return boom
	})
	require.ErrorIs(t, err, boom)

	res, err := list(t, s, tenant, store.ListParams{Kind: "Agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"default/keep"}, names(res.Items))
	require.Equal(t, "1", res.Items[0].Spec["v"])
	require.Equal(t, "1", res.ResourceVersion)
	changes, err := s.ChangesSince(ctx, tenant, 0, 100)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		evs, err := r.EventList(ctx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, evs)
		recs, err := r.AuditList(ctx, store.AuditListParams{})
		require.NoError(t, err)
		require.Empty(t, recs)
		return nil
	}))
	// The versions of the rolled-back transaction are reused.
	next := create(t, s, tenant, NewObject("Agent", "default", "next", nil, nil))[0]
	require.Equal(t, "2", next.Metadata.ResourceVersion)

	// A panic in fn rolls back too.
	require.Panics(t, func() {
		_ = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.ResourceCreate(ctx, NewObject("Agent", "default", "panic", nil, nil)); err != nil {
				return err
			}
			panic("boom")
		})
	})
	_, err = get(t, s, tenant, resource.Key{Kind: "Agent", Namespace: "default", Name: "panic"})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant, other := NewTenant(), NewTenant()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var inserted []events.Event
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for i := range 5 {
			ev, err := tx.EventInsert(ctx, events.Event{
				Type: events.ToolCallRequested, Time: now.Add(time.Duration(i) * time.Second),
				Namespace: "default", Subject: fmt.Sprint("ToolCall/c", i),
				Data: map[string]any{"i": i, "tool": "crm.lookup"},
			})
			if err != nil {
				return err
			}
			inserted = append(inserted, ev)
		}
		return nil
	}))
	for i, ev := range inserted {
		require.Equal(t, int64(i+1), ev.Seq)
		require.Equal(t, tenant, ev.Tenant)
	}
	require.NoError(t, s.Update(ctx, other, func(ctx context.Context, tx store.Tx) error {
		ev, err := tx.EventInsert(ctx, events.Event{Type: events.AgentCompiled})
		require.Equal(t, int64(1), ev.Seq, "sequences are per tenant")
		require.False(t, ev.Time.IsZero(), "time defaults to now")
		return err
	}))
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		all, err := r.EventList(ctx, 0, 100)
		require.NoError(t, err)
		require.Len(t, all, 5)
		for i, ev := range all {
			require.Equal(t, inserted[i].Seq, ev.Seq)
			require.Equal(t, inserted[i].Type, ev.Type)
			require.True(t, inserted[i].Time.Equal(ev.Time))
			require.Equal(t, inserted[i].Subject, ev.Subject)
			require.Equal(t, float64(i), ev.Data["i"])
			require.Equal(t, tenant, ev.Tenant)
		}
		page, err := r.EventList(ctx, 2, 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, int64(3), page[0].Seq)
		return nil
	}))
}

func testAudit(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	base := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	recs := []audit.Record{
		{Time: base, Actor: "alice", Verb: "apply", Namespace: "dev", Resource: "Agent/a", Outcome: audit.OutcomeAllowed, Policy: "role:editor"},
		{Time: base.Add(time.Minute), Actor: "bob", Verb: "delete", Namespace: "prod", Resource: "Agent/b", Outcome: audit.OutcomeDenied, Reason: "forbidden"},
		{Time: base.Add(2 * time.Minute), Actor: "alice", Verb: "get", Namespace: "prod", Outcome: audit.OutcomeAllowed},
		{Actor: "carol", Verb: "apply", Namespace: "dev", Outcome: audit.OutcomeFailed, Tenant: "spoofed"},
	}
	for i, r := range recs {
		// One record per transaction in some, several in others.
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			out, err := tx.AuditInsert(ctx, r)
			if err != nil {
				return err
			}
			require.Equal(t, int64(i+1), out.Seq)
			require.Equal(t, tenant, out.Tenant)
			require.Equal(t, audit.ComputeHash(out), out.Hash)
			return nil
		}))
	}
	var all []audit.Record
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		all, err = r.AuditList(ctx, store.AuditListParams{})
		return err
	}))
	require.Len(t, all, 4)
	require.Equal(t, "", all[0].PrevHash)
	require.Equal(t, -1, audit.Verify(all, ""), "the chain holds")
	for i := 1; i < len(all); i++ {
		require.Equal(t, all[i-1].Hash, all[i].PrevHash)
	}
	require.False(t, all[3].Time.IsZero())

	cases := []struct {
		name   string
		params store.AuditListParams
		want   []int64
	}{
		{"actor", store.AuditListParams{Actor: "alice"}, []int64{1, 3}},
		{"namespace", store.AuditListParams{Namespace: "prod"}, []int64{2, 3}},
		{"verb", store.AuditListParams{Verb: "apply"}, []int64{1, 4}},
		{"since", store.AuditListParams{Since: base.Add(30 * time.Second)}, []int64{2, 3, 4}},
		{"after", store.AuditListParams{After: 2}, []int64{3, 4}},
		{"limit", store.AuditListParams{Limit: 2}, []int64{1, 2}},
		{"combined", store.AuditListParams{Actor: "alice", Namespace: "prod"}, []int64{3}},
	}
	for _, tc := range cases {
		var got []audit.Record
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			got, err = r.AuditList(ctx, tc.params)
			return err
		}))
		seqs := []int64{}
		for _, r := range got {
			seqs = append(seqs, r.Seq)
		}
		require.Equal(t, tc.want, seqs, tc.name)
	}

	// Concurrent appenders still build one gapless chain.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
					_, err := tx.AuditInsert(ctx, audit.Record{Actor: "x", Verb: "get", Outcome: audit.OutcomeAllowed})
					return err
				}))
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		all, err = r.AuditList(ctx, store.AuditListParams{Limit: 1000})
		return err
	}))
	require.Len(t, all, 44)
	for i, r := range all {
		require.Equal(t, int64(i+1), r.Seq)
	}
	require.Equal(t, -1, audit.Verify(all, ""))
}

func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func testAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	revoked := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	live := store.APIKey{Name: "ci", SecretHash: hashSecret("wk_live_" + tenant), Namespace: "*", Role: "admin", ExpiresAt: &exp}
	agent := store.APIKey{ID: "key-" + tenant, Name: "bot", SecretHash: hashSecret("wk_agent_" + tenant), Namespace: "dev", Role: "editor", Agent: "support-bot"}
	dead := store.APIKey{Name: "old", SecretHash: hashSecret("wk_dead_" + tenant), Namespace: "*", Role: "viewer", RevokedAt: &revoked}
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for _, k := range []store.APIKey{live, agent, dead} {
			if err := tx.APIKeyInsert(ctx, k); err != nil {
				return err
			}
		}
		return nil
	}))

	got, err := s.APIKeyLookup(ctx, live.SecretHash)
	require.NoError(t, err)
	require.Equal(t, tenant, got.Tenant)
	require.NotEmpty(t, got.ID)
	require.Equal(t, "ci", got.Name)
	require.Equal(t, "*", got.Namespace)
	require.Equal(t, "admin", got.Role)
	require.NotNil(t, got.ExpiresAt)
	require.True(t, exp.Equal(*got.ExpiresAt))
	require.False(t, got.CreatedAt.IsZero())
	require.Nil(t, got.RevokedAt)

	got, err = s.APIKeyLookup(ctx, agent.SecretHash)
	require.NoError(t, err)
	require.Equal(t, agent.ID, got.ID)
	require.Equal(t, "support-bot", got.Agent)
	require.Nil(t, got.ExpiresAt)

	for _, h := range []string{dead.SecretHash, hashSecret("unknown"), ""} {
		got, err := s.APIKeyLookup(ctx, h)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Nil(t, got)
	}

	// The same secret hash cannot be stored twice, and a key cannot name
	// another tenant.
	err = s.Update(ctx, NewTenant(), func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyInsert(ctx, store.APIKey{SecretHash: live.SecretHash, Role: "admin"})
	})
	require.ErrorIs(t, err, store.ErrAlreadyExists)
	err = s.Update(ctx, NewTenant(), func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyInsert(ctx, store.APIKey{Tenant: tenant, SecretHash: hashSecret("x" + tenant), Role: "admin"})
	})
	require.Error(t, err)
}

func testTenantIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	objA := create(t, s, a, NewObject("Agent", "default", "shared", nil, map[string]any{"owner": "a"}))[0]
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.EventInsert(ctx, events.Event{Type: events.AgentCompiled}); err != nil {
			return err
		}
		_, err := tx.AuditInsert(ctx, audit.Record{Actor: "a", Verb: "apply", Outcome: audit.OutcomeAllowed})
		return err
	}))

	_, err := get(t, s, b, objA.Key())
	require.ErrorIs(t, err, store.ErrNotFound, "get")
	res, err := list(t, s, b, store.ListParams{Kind: "Agent"})
	require.NoError(t, err)
	require.Empty(t, res.Items, "list")
	require.Equal(t, "0", res.ResourceVersion)
	_, err = update(t, s, b, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdate(ctx, NewObject("Agent", "default", "shared", nil, map[string]any{"owner": "b"}))
	})
	require.ErrorIs(t, err, store.ErrNotFound, "update")
	_, err = update(t, s, b, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, objA.Key(), map[string]any{"x": "y"}, "")
	})
	require.ErrorIs(t, err, store.ErrNotFound, "update status")
	_, err = update(t, s, b, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceDelete(ctx, objA.Key(), "")
	})
	require.ErrorIs(t, err, store.ErrNotFound, "delete")
	changes, err := s.ChangesSince(ctx, b, 0, 100)
	require.NoError(t, err)
	require.Empty(t, changes, "changes")
	require.NoError(t, s.View(ctx, b, func(ctx context.Context, r store.Reader) error {
		evs, err := r.EventList(ctx, 0, 100)
		require.NoError(t, err)
		require.Empty(t, evs, "events")
		recs, err := r.AuditList(ctx, store.AuditListParams{})
		require.NoError(t, err)
		require.Empty(t, recs, "audit")
		return nil
	}))

	// Tenant B may create the same name independently.
	objB := create(t, s, b, NewObject("Agent", "default", "shared", nil, map[string]any{"owner": "b"}))[0]
	require.Equal(t, "1", objB.Metadata.ResourceVersion, "versions are per tenant")
	stored, err := get(t, s, a, objA.Key())
	require.NoError(t, err)
	require.Equal(t, objA, stored)
}

func testConcurrentWriters(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	orig := create(t, s, tenant, NewObject("Agent", "default", "counter", nil, map[string]any{"n": 0}))[0]
	// Every writer reads and writes with a precondition; conflicts are
	// retried, so the final count equals the number of increments.
	const writers, increments = 4, 10
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range increments {
				for {
					err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
						cur, err := tx.ResourceGet(ctx, orig.Key())
						if err != nil {
							return err
						}
						cur.Spec["n"] = cur.Spec["n"].(float64) + 1
						_, err = tx.ResourceUpdate(ctx, cur)
						return err
					})
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					require.NoError(t, err)
					break
				}
			}
		})
	}
	wg.Wait()
	stored, err := get(t, s, tenant, orig.Key())
	require.NoError(t, err)
	require.Equal(t, float64(writers*increments), stored.Spec["n"])
	require.Equal(t, store.FormatVersion(writers*increments+1), stored.Metadata.ResourceVersion)
	changes, err := s.ChangesSince(ctx, tenant, 0, 1000)
	require.NoError(t, err)
	require.Len(t, changes, writers*increments+1)
	for i, c := range changes {
		require.Equal(t, int64(i+1), c.ResourceVersion, "versions are gapless and ordered")
	}
}

// testAuditHead: the head comes from the counter row, not the log. It is 0
// for a tenant without records, follows appends (inside the appending
// transaction too), ignores rolled-back appends and is per tenant.
func testAuditHead(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	head := func(tenant string) int64 {
		t.Helper()
		var h int64
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			h, err = r.AuditHead(ctx)
			return err
		}))
		return h
	}
	require.Zero(t, head(a))
	for i := range 3 {
		require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed}); err != nil {
				return err
			}
			h, err := tx.AuditHead(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(i+1), h, "the writing transaction sees its own append")
			return nil
		}))
	}
	require.Equal(t, int64(3), head(a))
	err := s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
		require.NoError(t, err)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, int64(3), head(a), "a rolled-back append does not move the head")
	require.Zero(t, head(b), "heads are per tenant")
	// A write transaction that appends nothing reads the stored head.
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		h, err := tx.AuditHead(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(3), h)
		return nil
	}))
}
