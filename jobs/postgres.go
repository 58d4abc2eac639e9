package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrationLockKey is the session advisory lock held while River's schema
// is migrated and granted, so that replicas starting together do not race
// (rivermigrate takes no lock of its own, and concurrent GRANTs on one
// object can fail with "tuple concurrently updated"). It differs from the
// store's own migration lock so neither waits for the other.
const migrationLockKey int64 = 0x77617264656e_6a // "warden" + "j"

// grants are what the application role needs on River's schema (River
// v0.47.0, migration 7) to insert, fetch, work, complete, clean and elect
// a leader. river_migration is left to the owner: the client never reads
// it. river_notification is only used by River's SQLite driver. The
// reindexer, which needs ownership, is switched off (see OpenPostgres).
// TestPostgresGrants fails when a River upgrade adds a table missing here.
var grants = []string{
	`GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE river_job, river_leader, river_queue TO %[1]s`,
	`GRANT USAGE ON SEQUENCE river_job_id_seq TO %[1]s`,
	`GRANT USAGE ON TYPE river_job_state TO %[1]s`,
	`GRANT EXECUTE ON FUNCTION river_job_state_in_bitmask(bit, river_job_state) TO %[1]s`,
}

// OpenPostgres migrates River's schema to the latest version as the role of
// ownerURL (the owner of Warden's schema or a superuser, as for
// postgres.Open), grants the role that appPool connects as (normally
// warden_app) what River needs on it, and returns a Queue whose client
// runs on appPool, so jobs are fetched and worked by the least-privileged
// role. appPool stays the caller's: Stop does not close it, and it must
// stay open until Stop returns. River holds one of its connections for
// LISTEN while started, so size it accordingly.
func OpenPostgres(ctx context.Context, ownerURL string, appPool *pgxpool.Pool, cfg Config) (*Queue, error) {
	if appPool == nil {
		return nil, errors.New("jobs: OpenPostgres needs the application pool, got nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	var appRole string
	if err := appPool.QueryRow(ctx, `SELECT current_user`).Scan(&appRole); err != nil {
		return nil, fmt.Errorf("jobs: find the application role: %w", err)
	}
	if cfg.NoMigrate {
		if err := checkPostgres(ctx, ownerURL); err != nil {
			return nil, err
		}
	} else if err := migratePostgres(ctx, ownerURL, appRole, cfg); err != nil {
		return nil, err
	}
	rc := cfg.riverConfig()
	// REINDEX needs ownership of the index on PostgreSQL 15, which the app
	// role lacks, so River's nightly reindex would only log errors. An
	// empty, non-nil list switches it off; operators reindex as the owner.
	rc.ReindexerIndexNames = []string{}
	c, err := river.NewClient(riverpgxv5.New(appPool), rc)
	if err != nil {
		return nil, fmt.Errorf("jobs: new River client: %w", err)
	}
	return &Queue{client: c, pgx: c}, nil
}

// migratePostgres applies River's migrations and grants, as the role of
// ownerURL, under migrationLockKey.
func migratePostgres(ctx context.Context, ownerURL, appRole string, cfg Config) error {
	lock, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return fmt.Errorf("jobs: connect to %s to migrate: %w", redact(ownerURL), err)
	}
	// Closing the session releases the advisory lock, even when unlocking
	// would fail.
	defer func() { _ = lock.Close(context.WithoutCancel(ctx)) }()
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("jobs: take the River migration lock: %w", err)
	}

	pcfg, err := pgxpool.ParseConfig(ownerURL)
	if err != nil {
		return fmt.Errorf("jobs: parse %s: %w", redact(ownerURL), err)
	}
	pcfg.MaxConns = 2
	owner, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("jobs: connect to %s to migrate: %w", redact(ownerURL), err)
	}
	defer owner.Close()
	m, err := rivermigrate.New(riverpgxv5.New(owner), &rivermigrate.Config{Logger: migrateLogger()})
	if err != nil {
		return fmt.Errorf("jobs: River migrator: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("jobs: migrate River's schema: %w", err)
	}
	for _, v := range res.Versions {
		cfg.Logger.Info("applied River migration", "driver", "postgres", "version", v.Version, "name", v.Name)
	}

	var ownerRole string
	if err := lock.QueryRow(ctx, `SELECT current_user`).Scan(&ownerRole); err != nil {
		return fmt.Errorf("jobs: find the migrating role: %w", err)
	}
	if ownerRole == appRole {
		// One role for everything (no separate app role): it owns
		// River's tables already.
		return nil
	}
	role := pgx.Identifier{appRole}.Sanitize()
	err = pgx.BeginFunc(ctx, lock, func(tx pgx.Tx) error {
		for _, g := range grants {
			if _, err := tx.Exec(ctx, fmt.Sprintf(g, role)); err != nil {
				return fmt.Errorf("%s: %w", fmt.Sprintf(g, role), err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("jobs: grant River's tables to %s: %w", appRole, err)
	}
	return nil
}

// checkPostgres fails when River's schema lacks a migration this binary's
// River needs. It reads river_migration as the role of ownerURL: the
// application role is not granted it.
func checkPostgres(ctx context.Context, ownerURL string) error {
	pcfg, err := pgxpool.ParseConfig(ownerURL)
	if err != nil {
		return fmt.Errorf("jobs: parse %s: %w", redact(ownerURL), err)
	}
	pcfg.MaxConns = 1
	owner, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("jobs: connect to %s to check River's schema: %w", redact(ownerURL), err)
	}
	defer owner.Close()
	m, err := rivermigrate.New(riverpgxv5.New(owner), &rivermigrate.Config{Logger: migrateLogger()})
	if err != nil {
		return fmt.Errorf("jobs: River migrator: %w", err)
	}
	res, err := m.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("jobs: check River's schema: %w", err)
	}
	if !res.OK {
		return fmt.Errorf("jobs: River's schema is behind this binary (%s); "+
			"apply its migrations first (warden up, or warden serve with --migrate)", strings.Join(res.Messages, "; "))
	}
	return nil
}

// redact hides the password of a URL in messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
