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
	pending, err := pendingMigrations(ctx, conn)
	if err != nil {
		return err
	}
	for _, m := range pending {
		body, err := fs.ReadFile(migrations.FS, m.path)
		if err != nil {
			return fmt.Errorf("postgres: read migration %s: %w", m.name, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record: %w", err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.name, err)
		}
		logf(m.name)
	}

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if _, err := conn.Exec(ctx, `INSERT INTO warden_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
		metaContinueKey, key); err != nil {
		return fmt.Errorf("postgres: store continue key: %w", err)
	}
	return nil
}

// migration is one embedded migration file.
type migration struct {
	version    int
	name, path string
}

// pendingMigrations lists, in order, the embedded migrations that
// schema_migrations does not record (all of them when the table is not
// there yet).
func pendingMigrations(ctx context.Context, conn *pgx.Conn) ([]migration, error) {
	applied := map[int]bool{}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: look for schema_migrations: %w", err)
	}
	if exists {
		rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return nil, fmt.Errorf("postgres: read schema_migrations: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return nil, fmt.Errorf("postgres: read schema_migrations: %w", err)
		}
		for _, v := range versions {
			applied[int(v)] = true
		}
	}
	files, err := fs.Glob(migrations.FS, "postgres/*.up.sql")
	if err != nil {
		return nil, fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(files)
	var pending []migration
	for _, f := range files {
		name := filepath.Base(f)
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("postgres: migration %s is not numbered: %w", name, err)
		}
		if !applied[v] {
			pending = append(pending, migration{version: v, name: name, path: f})
		}
	}
	return pending, nil
}

// SchemaBehindError is Open's answer, with Options.NoMigrate, to a
// database that lacks some of this binary's migrations.
type SchemaBehindError struct {
	// Missing names the migrations not applied, in order.
	Missing []string
}

func (e *SchemaBehindError) Error() string {
	return fmt.Sprintf("postgres: the schema is behind this binary: migrations %s are not applied; "+
		"apply them first (warden up, or warden serve with --migrate)", strings.Join(e.Missing, ", "))
}

// checkSchema connects as the role of ownerURL and returns a
// *SchemaBehindError when some embedded migration is not applied.
func checkSchema(ctx context.Context, ownerURL string) error {
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return fmt.Errorf("postgres: connect to check the schema: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	pending, err := pendingMigrations(ctx, conn)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	e := &SchemaBehindError{}
	for _, m := range pending {
		e.Missing = append(e.Missing, strings.TrimSuffix(m.name, ".up.sql"))
	}
	return e
}
