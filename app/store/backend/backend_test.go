package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/storetest"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pgURL := pgtest.NewDatabase(t)
	appURL, err := postgres.AppURLFor(pgURL)
	require.NoError(t, err)
	tests := []struct {
		name string
		url  string
		opts backend.Options
		err  string
	}{
		{"sqlite absolute", "sqlite://" + filepath.Join(dir, "a", "b", "warden.db"), backend.Options{}, ""},
		{"postgres derived app url", pgURL, backend.Options{}, ""},
		{"postgres explicit app url", pgURL, backend.Options{AppURL: appURL}, ""},
		{"sqlite without path", "sqlite://", backend.Options{}, "names no file"},
		{"unknown scheme", "mysql://x", backend.Options{}, `"mysql" is not supported`},
		{"kubernetes", "kubernetes://cluster", backend.Options{}, "not implemented"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := backend.Open(context.Background(), tc.url, tc.opts)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			tenant := storetest.NewTenant()
			require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "a", nil, nil))
				return err
			}))
		})
	}
	_, err = os.Stat(filepath.Join(dir, "a", "b", "warden.db"))
	require.NoError(t, err, "parent directories are created")
}

func TestOpenRelativeSQLite(t *testing.T) {
	// Not parallel: it changes the working directory.
	t.Chdir(t.TempDir())
	s, err := backend.Open(context.Background(), "sqlite://data/warden.db", backend.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(filepath.Join("data", "warden.db"))
	require.NoError(t, err)
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"sqlite:///var/lib/warden/warden.db": true,
		"sqlite://rel/warden.db":             true,
		"postgres://warden@db:5432/warden":   false,
		"postgresql://warden@db/warden":      false,
		"":                                   false,
		"file:warden.db":                     false,
	} {
		if got := backend.Embedded(url); got != want {
			t.Errorf("Embedded(%q) = %v, want %v", url, got, want)
		}
	}
}
