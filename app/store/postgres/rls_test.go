package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/storetest"
)

func adminConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func eventOf(i int) events.Event {
	return events.Event{Type: events.ResourceApplied, Subject: fmt.Sprint("Agent/a", i)}
}

func nameOf(i int) string { return fmt.Sprint("agent-", i) }

// seedTenant gives a tenant a row in every tenant table.
func seedTenant(t *testing.T, s store.Store, tenant string) {
	t.Helper()
	sum := sha256.Sum256([]byte("secret-" + tenant))
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "a", nil, map[string]any{"owner": tenant})); err != nil {
			return err
		}
		if _, err := tx.EventInsert(ctx, events.Event{Type: events.AgentCompiled}); err != nil {
			return err
		}
		if _, err := tx.AuditInsert(ctx, audit.Record{Actor: "u", Verb: "apply", Outcome: audit.OutcomeAllowed}); err != nil {
			return err
		}
		if err := tx.MemberUpsert(ctx, store.Member{Email: "owner@" + tenant + ".example", Owner: true}); err != nil {
			return err
		}
		if _, err := tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: "k", Call: "call-" + tenant, Window: time.Hour}); err != nil {
			return err
		}
		if _, _, err := tx.UsageCharge(ctx, []store.UsageCharge{{UsageKey: store.UsageKey{Key: "rate", WindowStart: time.Unix(0, 0)}, Calls: 1}}); err != nil {
			return err
		}
		if err := tx.RAGDocumentPut(ctx, store.RAGDocument{Namespace: "default", Index: "docs", Source: "s", Document: "d", Hash: "h"}); err != nil {
			return err
		}
		if err := tx.RAGChunkPut(ctx, store.RAGChunk{Namespace: "default", Index: "docs", Source: "s", Document: "d", Hash: "h",
			Text: "owned by " + tenant, Terms: map[string]int{"owned": 1}}); err != nil {
			return err
		}
		if err := tx.RAGTermAdjust(ctx, "default", "docs", map[string]int64{"owned": 1}); err != nil {
			return err
		}
		if err := tx.RouteDecisionInsert(ctx, []store.RouteDecision{{ID: "d-" + tenant, Namespace: "default", Route: "r", Time: time.Unix(0, 0), Data: []byte(`{}`)}}); err != nil {
			return err
		}
		if _, err := tx.MemoryItemInsert(ctx, store.MemoryItem{ID: "item-" + tenant, Namespace: "default", Memory: "notes", Text: "owned by " + tenant}); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "key-" + tenant, SecretHash: hex.EncodeToString(sum[:]), Namespace: "*", Role: "admin"})
	}))
	sp := storetest.NewSpan(storetest.NewTraceID(), [8]byte{}, "s", time.Unix(1_800_000_000, 0), time.Second)
	sp.Agent = "seed-bot"
	require.NoError(t, s.SpanWrite(context.Background(), tenant, &store.SpanBatch{Spans: []store.Span{sp},
		Resources: []store.SpanResource{{ID: 1, Data: []byte("r")}},
		Rollups:   []store.SpanRollup{{Namespace: "default", Tool: "t", Minute: 60, Calls: 1}},
		Events:    []store.OCSFEvent{{Namespace: "default", Time: 1, ClassUID: 6003, Data: []byte("{}")}}}))
	require.NoError(t, s.SessionInsert(context.Background(), store.Session{IDHash: sessionHash(tenant), Tenant: tenant,
		Email: "owner@" + tenant + ".example", ExpiresAt: time.Now().Add(time.Hour)}))
}

// sessionHash is the id hash of the session seedTenant gives tenant.
func sessionHash(tenant string) string {
	sum := sha256.Sum256([]byte("session-" + tenant))
	return hex.EncodeToString(sum[:])
}

// testIdentityRowLevelSecurity proves, as the app role with raw SQL, that
// the tenant directory and sessions are reachable only through their
// SECURITY DEFINER functions, that those functions return only the rows
// their arguments name, and that signing keys cannot be deleted. a and b
// were seeded by seedTenant.
func testIdentityRowLevelSecurity(t *testing.T, s store.Store, a, b string,
	asTenant func(tenant string, fn func(tx pgx.Tx) error) error, requireRefused func(err error, msg string)) {
	ctx := context.Background()
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: a}))
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: b}))
	shared := "shared-" + a + "@example.com"
	for _, tenant := range []string{a, b} {
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			return tx.MemberUpsert(ctx, store.Member{Email: shared})
		}))
		require.NoError(t, s.SessionInsert(ctx, store.Session{IDHash: sessionHash(tenant + "-shared"), Tenant: tenant,
			Email: shared, ExpiresAt: time.Now().Add(time.Hour)}))
	}
	exec := func(tenant, q string, args ...any) error {
		return asTenant(tenant, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, q, args...)
			return err
		})
	}
	rows := func(tenant, q string, args ...any) []string {
		var out []string
		require.NoError(t, asTenant(tenant, func(tx pgx.Tx) error {
			r, err := tx.Query(ctx, q, args...)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(r, pgx.RowTo[string])
			return err
		}))
		return out
	}

	// No direct access at all to the directory and the sessions, with or
	// without a tenant: warden_app holds no privilege on either table.
	for _, tenant := range []string{a, ""} {
		for _, q := range []string{
			`SELECT count(*) FROM tenants`,
			`INSERT INTO tenants (id, created_at) VALUES ('evil-' || md5(random()::text), now())`,
			`UPDATE tenants SET display_name = 'evil'`,
			`DELETE FROM tenants`,
			`SELECT count(*) FROM sessions`,
			`SELECT count(*) FROM sessions WHERE tenant_id = current_setting('warden.tenant_id', true)`,
			`INSERT INTO sessions (id_hash, tenant_id, email, csrf_token, created_at, expires_at) VALUES ('evil', '` + a + `', 'e', '', now(), now())`,
			`UPDATE sessions SET expires_at = expires_at`,
			`DELETE FROM sessions`,
		} {
			requireRefused(exec(tenant, q), fmt.Sprintf("as tenant %q: %s", tenant, q))
		}
	}

	// The functions answer only for the rows named.
	require.Equal(t, []string{a}, rows("", `SELECT tenant_id FROM warden_session_get($1, now())`, sessionHash(a)),
		"a session is found by its hash alone, before the tenant is known")
	require.Empty(t, rows(b, `SELECT tenant_id FROM warden_session_get($1, now() + interval '2 hours')`, sessionHash(a)),
		"an expired session is not found")
	want := []string{a, b}
	sort.Strings(want)
	require.Equal(t, want, rows("", `SELECT tenant_id FROM warden_memberships_by_email($1)`, shared))
	require.Equal(t, []string{a}, rows("", `SELECT tenant_id FROM warden_memberships_by_email($1)`, "owner@"+a+".example"))
	require.Equal(t, []string{a}, rows("", `SELECT id FROM warden_tenant_get($1)`, a))
	require.Equal(t, []string{"false"}, rows("", `SELECT warden_tenant_create($1, 'taken', now())::text`, a))
	require.Equal(t, []string{"false"}, rows("", `SELECT warden_api_key_touch($1, $2, now())::text`, b, "key-"+a),
		"touch names the key by tenant and id")

	// Ending a person's sessions acts only inside the caller's tenant (each
	// asTenant transaction rolls back, so check inside it).
	found := func(tx pgx.Tx, hash string) bool {
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM warden_session_get($1, now())`, hash).Scan(&n))
		return n == 1
	}
	require.NoError(t, asTenant(b, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT warden_session_end_member($1)`, shared)
		require.NoError(t, err)
		require.False(t, found(tx, sessionHash(b+"-shared")), "B's session of the person ended")
		require.True(t, found(tx, sessionHash(a+"-shared")), "A's session of the same person survives")
		require.True(t, found(tx, sessionHash(b)), "B's other sessions survive")
		return nil
	}))
	require.NoError(t, asTenant("", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT warden_session_end_member($1)`, shared)
		require.NoError(t, err)
		require.True(t, found(tx, sessionHash(a+"-shared")), "without a tenant it ends nothing")
		return nil
	}))

	// Signing keys belong to the deployment: readable, insertable and
	// retirable by the app role, never deletable.
	require.NoError(t, asTenant("", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO signing_keys (id, public_key, private_key_encrypted, created_at)
			VALUES ($1, 'p', 'e', now())`, "rls-"+a)
		require.NoError(t, err)
		tag, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = now() WHERE id = $1`, "rls-"+a)
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected())
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM signing_keys WHERE id = $1`, "rls-"+a).Scan(&n))
		require.Equal(t, 1, n)
		return nil
	}))
	requireRefused(exec("", `DELETE FROM signing_keys`), "DELETE of signing keys")
}

// testRowLevelSecurity connects as the app role with raw SQL, as a bug in
// the driver would, and proves the database itself keeps tenants apart.
func testRowLevelSecurity(t *testing.T, url string, s store.Store) {
	ctx := context.Background()
	a, b := storetest.NewTenant(), storetest.NewTenant()
	seedTenant(t, s, a)
	seedTenant(t, s, b)
	seedLegacySpans(t, url, a, b)

	appURL, err := postgres.AppURLFor(url)
	require.NoError(t, err)
	app, err := pgx.Connect(ctx, appURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close(context.Background()) })

	var super, bypass bool
	require.NoError(t, app.QueryRow(ctx, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&super, &bypass))
	require.False(t, super, "the app role is not a superuser")
	require.False(t, bypass, "the app role cannot bypass RLS")

	// asTenant runs fn in a transaction scoped to tenant (none when empty)
	// and always rolls back, so a refused statement cannot poison the next.
	asTenant := func(tenant string, fn func(tx pgx.Tx) error) error {
		tx, err := app.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		if tenant != "" {
			_, err := tx.Exec(ctx, `SELECT set_config('warden.tenant_id', $1, true)`, tenant)
			require.NoError(t, err)
		}
		return fn(tx)
	}
	count := func(tenant, q string, args ...any) int {
		var n int
		require.NoError(t, asTenant(tenant, func(tx pgx.Tx) error { return tx.QueryRow(ctx, q, args...).Scan(&n) }))
		return n
	}
	affected := func(tenant, q string, args ...any) (int64, error) {
		var n int64
		err := asTenant(tenant, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, q, args...)
			n = tag.RowsAffected()
			return err
		})
		return n, err
	}
	requireRefused := func(err error, msg string) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: want a permission error, got %v", msg, err)
		require.Equal(t, "42501", pgErr.Code, "%s: %v", msg, err)
	}

	tables := []struct {
		name   string
		insert string // inserts one row for tenant $1
		update string // a harmless column update
	}{
		{"resources", `INSERT INTO resources (tenant_id, kind, namespace, name, uid, rv, object) VALUES ($1, 'Agent', 'default', 'evil', 'u', 99, '{}')`, `rv = rv`},
		{"changes", `INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object) VALUES ($1, 999, 'ADDED', 'Agent', 'default', 'evil', '{}')`, `type = type`},
		{"events", `INSERT INTO events (tenant_id, seq, type, time) VALUES ($1, 999, 'Evil', now())`, `type = type`},
		{"audit_log", `INSERT INTO audit_log (tenant_id, seq, time, actor, verb, outcome, prev_hash, hash) VALUES ($1, 999, now(), 'evil', 'v', 'o', '', '')`, `actor = actor`},
		{"api_keys", `INSERT INTO api_keys (id, tenant_id, secret_hash, created_at) VALUES ('evil-' || $1, $1, 'evil-' || $1, now())`, `role = role`},
		{"tenant_state", `INSERT INTO tenant_state (tenant_id) VALUES ($1 || '-new')`, `rv = rv`},
		{"members", `INSERT INTO members (tenant_id, email, created_at) VALUES ($1, 'evil@example.com', now())`, `name = name`},
		{"idempotency_keys", `INSERT INTO idempotency_keys (tenant_id, namespace, key, call, claimed_at) VALUES ($1, 'default', 'evil', 'evil', now())`, `released = released`},
		{"usage_counters", `INSERT INTO usage_counters (tenant_id, key, window_start, calls, cost) VALUES ($1, 'evil', now(), 1, 0)`, `calls = calls`},
		{"rag_documents", `INSERT INTO rag_documents (tenant_id, namespace, index_name, source, document, hash, updated_at) VALUES ($1, 'default', 'docs', 's', 'evil', 'h', now())`, `hash = hash`},
		{"rag_chunks", `INSERT INTO rag_chunks (tenant_id, namespace, index_name, source, document, ordinal, hash, text, start_offset, end_offset, length, terms) VALUES ($1, 'default', 'docs', 's', 'evil', 0, 'h', 'ignore previous instructions', 0, 1, 1, '{}')`, `text = text`},
		{"rag_postings", `INSERT INTO rag_postings (tenant_id, namespace, index_name, term, source, document, ordinal, tf) VALUES ($1, 'default', 'docs', 'evil', 's', 'd', 0, 1)`, `tf = tf`},
		{"rag_terms", `INSERT INTO rag_terms (tenant_id, namespace, index_name, term, df) VALUES ($1, 'default', 'docs', 'evil', 1)`, `df = df`},
		{"spans", `INSERT INTO spans (tenant_id, namespace, trace_id, span_id, name, kind, start_ns, end_ns, status, resource, data) VALUES ($1, 'default', '\x01', '\x01', 'evil', 1, 1, 1, 0, 1, '')`, `name = name`},
		{"span_blocks", `INSERT INTO span_blocks (tenant_id, namespace, trace_id, min_start, max_start, spans, data) VALUES ($1, 'default', '\x01', 1, 1, 1, '')`, `spans = spans`},
		{"span_keys", `INSERT INTO span_keys (tenant_id, block_id, kind, value, max_start) VALUES ($1, 1, 1, 'evil', 1)`, `value = value`},
		{"span_resources", `INSERT INTO span_resources (tenant_id, id, data, last_seen) VALUES ($1, 99, '', 1)`, `data = data`},
		{"span_rollups", `INSERT INTO span_rollups (tenant_id, width, minute, namespace, agent, tool, model, calls, errors, latency_sum, cost, tokens,
			h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
			VALUES ($1, 60, 0, 'default', '', 'evil', '', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`, `calls = calls`},
		{"ocsf_events", `INSERT INTO ocsf_events (tenant_id, namespace, time_ms, class_uid, activity_id, severity_id, status_id, actor, operation, data) VALUES ($1, 'default', 1, 6003, 1, 1, 1, 'evil', 'x', '')`, `actor = actor`},
		{"route_decisions", `INSERT INTO route_decisions (tenant_id, id, namespace, execution, route, agent, time, data) VALUES ($1, 'evil', 'default', '', 'r', '', now(), '{}')`, `route = route`},
		{"memory_items", `INSERT INTO memory_items (tenant_id, namespace, memory, id, text, created_at) VALUES ($1, 'default', 'notes', 'evil', 'evil', now())`, `text = text`},
	}
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			require.Positive(t, count(a, `SELECT count(*) FROM `+tb.name), "tenant A sees its own rows")
			require.Zero(t, count(a, `SELECT count(*) FROM `+tb.name+` WHERE tenant_id = $1`, b), "SELECT of B's rows")
			require.Zero(t, count(a, `SELECT count(*) FROM `+tb.name+` WHERE tenant_id <> $1`, a), "SELECT of any other rows")
			require.Zero(t, count("", `SELECT count(*) FROM `+tb.name), "no rows without a tenant")
			require.Zero(t, count("nobody", `SELECT count(*) FROM `+tb.name), "no rows for an unknown tenant")

			_, err := affected(a, tb.insert, b)
			requireRefused(err, "INSERT with tenant B's id")
			_, err = affected("", tb.insert, b)
			requireRefused(err, "INSERT without a tenant")

			if tb.name == "audit_log" {
				_, err := affected(a, `UPDATE audit_log SET `+tb.update+` WHERE tenant_id = $1`, a)
				requireRefused(err, "UPDATE of the own audit log")
				// Retention deletes only the records the tenant's
				// checkpoint stands for (migration 0008); with none, none.
				n, err := affected(a, `DELETE FROM audit_log WHERE tenant_id = $1`, a)
				require.NoError(t, err)
				require.Zero(t, n, "DELETE of the own audit log without a checkpoint")
				require.NoError(t, asTenant(a, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO audit_checkpoints (tenant_id, seq, hash, time, cut_at, seal)
						VALUES ($1, 1, 'h', now(), now(), 's')`, a)
					require.NoError(t, err)
					tag, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant_id, seq, time, actor, verb, outcome, prev_hash, hash)
						VALUES ($1, 2, now(), 'u', 'v', 'o', '', '')`, a)
					require.NoError(t, err)
					require.EqualValues(t, 1, tag.RowsAffected())
					tag, err = tx.Exec(ctx, `DELETE FROM audit_log`)
					require.NoError(t, err)
					require.EqualValues(t, 1, tag.RowsAffected(), "only record 1, behind the checkpoint, goes")
					require.Zero(t, countIn(t, tx, `SELECT count(*) FROM audit_checkpoints WHERE tenant_id = $1`, b))
					_, err = tx.Exec(ctx, `UPDATE audit_checkpoints SET seq = 0`)
					require.Error(t, err, "a checkpoint only moves forward")
					return nil
				}))
				_, err = affected(a, `INSERT INTO audit_checkpoints (tenant_id, seq, hash, time, cut_at, seal) VALUES ($1, 1, 'h', now(), now(), 's')`, b)
				requireRefused(err, "INSERT of tenant B's checkpoint")
				return
			}
			n, err := affected(a, `UPDATE `+tb.name+` SET `+tb.update+` WHERE tenant_id = $1`, b)
			require.NoError(t, err)
			require.Zero(t, n, "UPDATE of B's rows")
			n, err = affected(a, `DELETE FROM `+tb.name+` WHERE tenant_id = $1`, b)
			require.NoError(t, err)
			require.Zero(t, n, "DELETE of B's rows")
			n, err = affected(a, `UPDATE `+tb.name+` SET `+tb.update)
			require.NoError(t, err)
			require.Positive(t, n, "UPDATE of the own rows works")
			_, err = affected(a, `UPDATE `+tb.name+` SET tenant_id = $1`, b)
			requireRefused(err, "moving own rows to tenant B")
		})
	}

	t.Run("Identity", func(t *testing.T) {
		testIdentityRowLevelSecurity(t, s, a, b, asTenant, requireRefused)
	})

	// The app role cannot switch RLS off or read the migration table.
	_, err = affected(a, `ALTER TABLE resources DISABLE ROW LEVEL SECURITY`)
	requireRefused(err, "ALTER TABLE")
	_, err = affected(a, `SELECT * FROM schema_migrations`)
	requireRefused(err, "schema_migrations")
	_, err = affected(a, `UPDATE warden_meta SET value = 'x'`)
	requireRefused(err, "warden_meta is read-only")
	_, err = affected("", `SET ROLE postgres`)
	require.Error(t, err, "SET ROLE")

	// Tenant B's data is intact.
	require.NoError(t, s.View(ctx, b, func(ctx context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx, store.ListParams{Kind: "Agent"})
		require.NoError(t, err)
		require.Len(t, res.Items, 1)
		require.Equal(t, b, res.Items[0].Spec["owner"])
		recs, err := r.AuditList(ctx, store.AuditListParams{})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, -1, audit.Verify(recs, ""))
		usage, err := r.UsageGet(ctx, []store.UsageKey{{Key: "rate", WindowStart: time.Unix(0, 0)}})
		require.NoError(t, err)
		require.Equal(t, []store.UsageTotal{{Calls: 1}}, usage)
		chunks, err := r.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: "default", Index: "docs"})
		require.NoError(t, err)
		require.Len(t, chunks, 1)
		require.Equal(t, "owned by "+b, chunks[0].Text)
		items, err := r.MemoryItemQuery(ctx, store.MemoryQuery{Namespace: "default", Memory: "notes"})
		require.NoError(t, err)
		require.Len(t, items, 1)
		require.Equal(t, "owned by "+b, items[0].Text)
		return nil
	}))
	require.NoError(t, s.Update(ctx, b, func(ctx context.Context, tx store.Tx) error {
		holder, err := tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: "k", Call: "other", Window: time.Hour})
		require.Equal(t, "call-"+b, holder, "B's claim is still held")
		return err
	}))
}

func countIn(t *testing.T, tx pgx.Tx, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, tx.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// seedLegacySpans stores a span of each tenant in the per-span table that
// earlier versions wrote, as the owner.
func seedLegacySpans(t *testing.T, url string, tenants ...string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	for _, tenant := range tenants {
		require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('warden.tenant_id', $1, true)`, tenant); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO spans (tenant_id, namespace, trace_id, span_id, name, kind, start_ns, end_ns, status, resource, data)
				VALUES ($1, 'default', '\x02', '\x02', 'old', 1, 1, 1, 0, 1, '')`, tenant)
			return err
		}))
	}
}
