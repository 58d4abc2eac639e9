package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// OpenSQLite opens its own handle on the SQLite database file at path (the
// store's file; it is created 0600, with its directory, when missing),
// applies River's SQLite migrations and returns a Queue on it. Stop closes
// the handle.
//
// The handle has a single connection, as riversqlite asks, with the
// store's pragmas (WAL, busy_timeout 10 s, foreign keys, synchronous
// NORMAL) and BEGIN IMMEDIATE transactions. River's connection and the
// store's writer connection are two writers on one file: SQLite lets one
// write at a time and the other waits in busy_timeout. Taking the write
// lock at BEGIN is what makes that wait work; a deferred transaction that
// reads and then writes would instead fail at once with SQLITE_BUSY when
// the other connection committed in between, since waiting could not help.
func OpenSQLite(ctx context.Context, path string, cfg Config) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if path == "" {
		return nil, errors.New("jobs: empty SQLite database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("jobs: SQLite database path %q must not contain '?' or '#'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("jobs: create directory %s: %w", dir, err)
		}
	}
	// As the store does: create the file 0600 before SQLite would create
	// it 0644; the store keeps secrets in it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jobs: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("jobs: create %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"+
		"&_pragma=synchronous(NORMAL)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("jobs: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	driver := riversqlite.New(db)

	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: migrateLogger()})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("jobs: River migrator: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("jobs: migrate River's schema in %s: %w", path, err)
	}
	for _, v := range res.Versions {
		cfg.Logger.Info("applied River migration", "driver", "sqlite", "version", v.Version, "name", v.Name)
	}
	c, err := river.NewClient(driver, cfg.riverConfig())
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("jobs: new River client: %w", err)
	}
	return &Queue{client: c, close: db.Close}, nil
}
