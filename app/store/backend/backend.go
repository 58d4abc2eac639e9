package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/sqlite"
)

// Options configures Open.
type Options struct {
	// Logger receives driver diagnostics; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for timestamps; nil means time.Now.
	Now func() time.Time
	// AppURL applies to postgres:// only. The URL given to Open is used to
	// run the migrations (it must name the owner of the schema or a
	// superuser, with CREATEROLE on first start); the server then connects
	// as the non-owner role warden_app so that row-level security cannot be
	// bypassed. AppURL is that role's connection URL. When empty it is
	// derived from the Open URL by replacing the user with warden_app and
	// dropping the password, which suits trust or certificate
	// authentication; with password authentication set it explicitly.
	AppURL string
	// NoMigrate applies to postgres:// only: Open checks that every
	// migration is applied rather than applying them, and refuses a schema
	// that is behind (*postgres.SchemaBehindError).
	NoMigrate bool
}

// sqliteScheme starts the URL of the embedded store.
const sqliteScheme = "sqlite://"

// Embedded reports whether url names the embedded store, SQLite in this
// process (its file I/O runs on the process's own threads).
func Embedded(url string) bool { return strings.HasPrefix(url, sqliteScheme) }

// Open opens and migrates the store named by url:
//
//	sqlite:///abs/path/warden.db   sqlite://relative/path/warden.db
//	postgres://owner@host:5432/db?sslmode=disable
//
// The SQLite file and its parent directory are created when missing.
func Open(ctx context.Context, url string, opts Options) (store.Store, error) {
	switch {
	case Embedded(url):
		path := strings.TrimPrefix(url, sqliteScheme)
		if path == "" {
			return nil, fmt.Errorf("store URL %q names no file: use sqlite:///abs/path.db or sqlite://rel/path.db", url)
		}
		s, err := sqlite.Open(ctx, path, sqlite.Options{Logger: opts.Logger, Now: opts.Now})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return s, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.Open(ctx, url, postgres.Options{Logger: opts.Logger, Now: opts.Now, AppURL: opts.AppURL, NoMigrate: opts.NoMigrate})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return s, nil
	case strings.HasPrefix(url, "kubernetes://"):
		return nil, fmt.Errorf("store URL %q: the kubernetes backend is not implemented yet", url)
	}
	scheme, _, _ := strings.Cut(url, "://")
	return nil, fmt.Errorf("store URL scheme %q is not supported: use sqlite:// or postgres://", scheme)
}
