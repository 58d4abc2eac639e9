package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/migrations"
)

// migrationLockKey is the advisory lock taken while migrating, so that two
// replicas starting together apply each migration once. Advisory locks are
// per database.
const migrationLockKey int64 = 0x77617264656e // "warden"

// metaContinueKey names the HMAC key of continue tokens in warden_meta.
const metaContinueKey = "continue_hmac_key"

// migrate applies, as the owner role of ownerURL, every embedded migration
// not yet recorded in schema_migrations, each in its own transaction, and
// creates the continue-token key on first run.
func migrate(ctx context.Context, ownerURL string, logf func(name string)) error {
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return fmt.Errorf("postgres: connect to migrate: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("postgres: take migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLockKey) }()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: create schema_migrations: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("postgres: read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("postgres: read schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, v := range versions {
		applied[int(v)] = true
	}

	files, err := fs.Glob(migrations.FS, "postgres/*.up.sql")
	if err != nil {
		return fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		name := filepath.Base(f)
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("postgres: migration %s is not numbered: %w", name, err)
		}
		if applied[v] {
			continue
		}
		body, err := fs.ReadFile(migrations.FS, f)
		if err != nil {
			return fmt.Errorf("postgres: read migration %s: %w", name, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, name); err != nil {
				return fmt.Errorf("record: %w", err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
		logf(name)
	}

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if _, err := conn.Exec(ctx, `INSERT INTO warden_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
		metaContinueKey, key); err != nil {
		return fmt.Errorf("postgres: store continue key: %w", err)
	}
	return nil
}
