package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

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
		return tx.APIKeyInsert(ctx, store.APIKey{SecretHash: hex.EncodeToString(sum[:]), Namespace: "*", Role: "admin"})
	}))
}

// testRowLevelSecurity connects as the app role with raw SQL, as a bug in
// the driver would, and proves the database itself keeps tenants apart.
func testRowLevelSecurity(t *testing.T, url string, s store.Store) {
	ctx := context.Background()
	a, b := storetest.NewTenant(), storetest.NewTenant()
	seedTenant(t, s, a)
	seedTenant(t, s, b)

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
				_, err = affected(a, `DELETE FROM audit_log WHERE tenant_id = $1`, a)
				requireRefused(err, "DELETE of the own audit log")
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
		return nil
	}))
}
