package postgres_test

import (
	"context"
	"fmt"
	"io/fs"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/migrations"
)

func open(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

// TestPostgres shares one database among all its subtests; they isolate
// themselves by tenant. The database is dropped after the last subtest.
func TestPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	shared := open(t, url)

	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T) store.Store { return shared })
	})
	t.Run("RowLevelSecurity", func(t *testing.T) {
		t.Parallel()
		testRowLevelSecurity(t, url, shared)
	})
	t.Run("LegacySpans", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		owner, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = owner.Close(context.Background()) })
		storetest.LegacySpans(t, shared, func(tenant string, sp store.Span) {
			require.NoError(t, pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT set_config('warden.tenant_id', $1, true)`, tenant); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO spans (tenant_id, `+store.SpanColumns+`)
					VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8, $9, $10, $11, NULL, NULL, NULL, NULL, NULL, $12, $13)`,
					tenant, sp.Namespace, sp.TraceID[:], sp.SpanID[:], sp.Name, sp.Kind, sp.Start, sp.End, sp.Status, sp.Service, sp.Agent, sp.Resource, sp.Data)
				return err
			}))
		})
	})
	t.Run("ListenAcrossReplicas", func(t *testing.T) {
		t.Parallel()
		testListenAcrossReplicas(t, url, shared)
	})
	t.Run("ListenConfigAcrossReplicas", func(t *testing.T) {
		t.Parallel()
		testListenConfigAcrossReplicas(t, url, shared)
	})
	t.Run("SyncFlushesWriteCalls", func(t *testing.T) {
		t.Parallel()
		testSyncFlushes(t, url, shared)
	})
}

// testSyncFlushes: WriteCalls commits without waiting for its WAL flush;
// once Sync returns, the WAL is flushed past that commit.
func testSyncFlushes(t *testing.T, url string, s *postgres.Store) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = admin.Close(ctx) }()
	for i := range 20 {
		w := &store.CallWrite{Claim: &store.IdempotencyClaim{Namespace: "default", Key: fmt.Sprint("k", i), Call: fmt.Sprint("tc-", i), Window: time.Hour},
			Creates: []*resource.Object{{APIVersion: resource.GroupVersion, Kind: resource.KindToolCall,
				Metadata: resource.ObjectMeta{Name: fmt.Sprint("tc-", i), Namespace: "default"}}}}
		require.NoError(t, s.WriteCalls(ctx, "t-sync", []*store.CallWrite{w}, false))
		var lsn string
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn))
		require.NoError(t, s.Sync(ctx))
		var flushed bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, lsn).Scan(&flushed))
		require.True(t, flushed, "write %d: the WAL is flushed past the commit once Sync returned", i)
	}
}

// TestListenerReconnects kills the listener connections of its own
// database, so it does not share one with other tests.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	testListenerReconnects(t, pgtest.NewDatabase(t))
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	stores := make([]*postgres.Store, 3)
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
		})
	}
	wg.Wait()
	for i, s := range stores {
		require.NoError(t, errs[i])
		t.Cleanup(func() { require.NoError(t, s.Close()) })
	}
	// All replicas share one continue-token key: a token from one is
	// accepted by another.
	tenant := storetest.NewTenant()
	require.NoError(t, stores[0].Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for _, n := range []string{"a", "b", "c"} {
			if _, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", n, nil, nil)); err != nil {
				return err
			}
		}
		return nil
	}))
	var cont string
	require.NoError(t, stores[1].View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx, store.ListParams{Kind: "Agent", Limit: 1})
		cont = res.Continue
		return err
	}))
	require.NoError(t, stores[2].View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx, store.ListParams{Kind: "Agent", Limit: 5, Continue: cont})
		require.Len(t, res.Items, 2)
		return err
	}))

	// Opening again applies nothing.
	open(t, url)
	conn := adminConn(t, url)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n))
	require.Equal(t, migrationCount(t), n)
}

func TestAppURLFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		err            bool
	}{
		{"user replaced", "postgres://postgres@127.0.0.1:5432/warden?sslmode=disable", "postgres://warden_app@127.0.0.1:5432/warden?sslmode=disable", false},
		{"password dropped", "postgresql://owner:secret@db/w", "postgresql://warden_app@db/w", false},
		{"keyword form", "host=db user=owner", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := postgres.AppURLFor(tc.in)
			if tc.err {
				require.Error(t, err)
				require.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func testListenAcrossReplicas(t *testing.T, url string, writer *postgres.Store) {
	other := open(t, url)
	select {
	case <-other.ListenerReady():
	case <-time.After(10 * time.Second):
		t.Fatal("listener of the second replica did not subscribe")
	}
	tenant := storetest.NewTenant()
	heard := make(chan struct{})
	var once sync.Once
	stop := other.Listen(func(got string) {
		if got == tenant {
			once.Do(func() { close(heard) })
		}
	})
	defer stop()
	require.NoError(t, writer.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "a", nil, nil))
		return err
	}))
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica did not hear the commit")
	}
}

// heard records the tenants a listener was called for.
type heard struct {
	mu     sync.Mutex
	counts map[string]int
	signal chan struct{}
}

func newHeard() *heard { return &heard{counts: map[string]int{}, signal: make(chan struct{}, 1)} }

func (h *heard) fn(tenant string) {
	h.mu.Lock()
	h.counts[tenant]++
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *heard) count(tenant string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[tenant]
}

func (h *heard) waitFor(t *testing.T, tenant string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for h.count(tenant) == 0 {
		select {
		case <-h.signal:
		case <-timeout:
			t.Fatalf("no callback for tenant %s", tenant)
		}
	}
}

// testListenConfigAcrossReplicas: a replica that did not write hears,
// through LISTEN alone, configuration commits on ListenConfig and every
// commit on Listen. Notifications arrive in commit order, so once it heard
// a configuration commit after a record-only one, and then a second (so
// that the callback batch holding the first has run to its end), it would
// have called ListenConfig for the record-only commit if it ever will.
func testListenConfigAcrossReplicas(t *testing.T, url string, writer *postgres.Store) {
	ctx := context.Background()
	other := open(t, url)
	select {
	case <-other.ListenerReady():
	case <-time.After(10 * time.Second):
		t.Fatal("listener of the second replica did not subscribe")
	}
	cfg, all := newHeard(), newHeard()
	defer other.ListenConfig(cfg.fn)()
	defer other.Listen(all.fn)()
	write := func(tenant, kind string) {
		require.NoError(t, writer.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.ResourceCreate(ctx, storetest.NewObject(kind, "default", "x", nil, nil))
			return err
		}))
	}
	records, fence1, fence2 := storetest.NewTenant(), storetest.NewTenant(), storetest.NewTenant()
	write(records, resource.KindToolCall)
	write(fence1, resource.KindTool)
	cfg.waitFor(t, fence1)
	write(fence2, resource.KindPolicy)
	cfg.waitFor(t, fence2)
	all.waitFor(t, fence2)
	require.Positive(t, all.count(records), "Listen hears record-only commits of other replicas")
	require.Positive(t, all.count(fence1), "Listen hears configuration commits of other replicas")
	require.Zero(t, cfg.count(records), "ListenConfig ignores record-only commits of other replicas")
}

func testListenerReconnects(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url)
	<-s.ListenerReady()
	writer := open(t, url)
	conn := adminConn(t, url)
	// Kill every LISTENing backend of the app role in this database.
	var killed int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND usename = 'warden_app' AND query ILIKE 'LISTEN%'`).Scan(&killed))
	require.Positive(t, killed)

	tenant := storetest.NewTenant()
	heard := make(chan struct{}, 1)
	stop := s.Listen(func(got string) {
		if got == tenant {
			select {
			case heard <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	// Keep writing through the other replica until the reconnected
	// listener hears one of the commits.
	deadline := time.After(20 * time.Second)
	for i := 0; ; i++ {
		require.NoError(t, writer.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.EventInsert(ctx, eventOf(i))
			if err != nil {
				return err
			}
			_, err = tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", nameOf(i), nil, nil))
			return err
		}))
		select {
		case <-heard:
			return
		case <-deadline:
			t.Fatal("listener did not reconnect")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func BenchmarkList10k(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkList(b, func(b *testing.B) store.Store { return open(b, url) })
}

func BenchmarkCreate1k(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkCreate(b, func(b *testing.B) store.Store { return open(b, url) })
}

func BenchmarkIdempotencyClaim(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkIdempotencyClaim(b, func(b *testing.B) store.Store { return open(b, url) })
}

func BenchmarkUsageCharge(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkUsageCharge(b, func(b *testing.B) store.Store { return open(b, url) })
}

func BenchmarkWriteCalls16(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkWriteCalls(b, func(b *testing.B) store.Store { return open(b, url) })
}

func BenchmarkWriteCall(b *testing.B) {
	url := pgtest.NewDatabase(b)
	storetest.BenchmarkWriteCall(b, func(b *testing.B) store.Store { return open(b, url) })
}

// TestNonSuperuserOwner migrates as an ordinary role that owns the database
// (not a superuser), as a managed Postgres would require: FORCE ROW LEVEL
// SECURITY then applies to the owner too, and the API-key lookup must still
// work through its SECURITY DEFINER function.
func TestNonSuperuserOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := "warden_owner_" + strings.ReplaceAll(storetest.NewTenant()[2:], "-", "")
	admin := adminConn(t, pgtest.AdminURL())
	_, err := admin.Exec(ctx, `CREATE ROLE `+owner+` LOGIN NOSUPERUSER NOBYPASSRLS CREATEROLE`)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), pgtest.AdminURL())
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		_, err = conn.Exec(context.Background(), `DROP ROLE IF EXISTS `+owner)
		require.NoError(t, err)
	})
	dbURL := pgtest.NewDatabase(t) // dropped before the role (cleanups run last-in first-out)
	u, err := neturl.Parse(dbURL)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+` OWNER TO `+owner)
	require.NoError(t, err)
	u.User = neturl.User(owner)

	s := open(t, u.String())
	tenant := storetest.NewTenant()
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "a", nil, nil)); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{SecretHash: "hash-" + tenant, Namespace: "*", Role: "admin"})
	}))
	key, err := s.APIKeyLookup(ctx, "hash-"+tenant)
	require.NoError(t, err)
	require.Equal(t, tenant, key.Tenant)

	// The identity functions, owned by this role, see through FORCE ROW
	// LEVEL SECURITY thanks to their TO CURRENT_USER policies.
	email := "owner@" + tenant + ".example"
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
	require.ErrorIs(t, s.TenantCreate(ctx, store.TenantRecord{ID: tenant}), store.ErrAlreadyExists)
	_, err = s.TenantGet(ctx, tenant)
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberUpsert(ctx, store.Member{Email: email})
	}))
	ms, err := s.MembershipsByEmail(ctx, email)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.NoError(t, s.APIKeyTouch(ctx, tenant, key.ID, time.Now()))
	key, err = s.APIKeyLookup(ctx, "hash-"+tenant)
	require.NoError(t, err)
	require.NotNil(t, key.LastUsedAt)
	sess := store.Session{IDHash: "session-" + tenant, Tenant: tenant, Email: email, ExpiresAt: time.Now().Add(time.Hour)}
	require.NoError(t, s.SessionInsert(ctx, sess))
	_, err = s.SessionGet(ctx, sess.IDHash, time.Now())
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, email) }))
	_, err = s.SessionGet(ctx, sess.IDHash, time.Now())
	require.ErrorIs(t, err, store.ErrNotFound, "the membership's sessions ended")
	require.NoError(t, s.SessionInsert(ctx, sess))
	require.NoError(t, s.SessionDelete(ctx, sess.IDHash))
	_, err = s.SessionGet(ctx, sess.IDHash, time.Now())
	require.ErrorIs(t, err, store.ErrNotFound)

	// The owner itself, connected directly, sees no tenant rows either.
	ownerConn := adminConn(t, u.String())
	var n int
	require.NoError(t, ownerConn.QueryRow(ctx, `SELECT count(*) FROM resources`).Scan(&n))
	require.Zero(t, n, "FORCE ROW LEVEL SECURITY applies to the owner")
}

// migrationCount is the number of embedded Postgres migrations.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "postgres/*.up.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}
