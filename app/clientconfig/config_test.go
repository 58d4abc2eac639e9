package clientconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "warden-home")

	cfg := New()
	cfg.SetContext(Context{Name: "local", Server: "http://127.0.0.1:8080", Token: "wk_secret", Namespace: "default"})
	cfg.SetContext(Context{Name: "prod", Server: "https://warden.example.com"})
	require.NoError(t, cfg.UseContext("local"))
	require.NoError(t, Save(home, cfg))

	got, err := Load(home)
	require.NoError(t, err)
	require.Equal(t, cfg, got)

	fi, err := os.Stat(Path(home))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(home)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	// Replacing a context keeps one entry.
	got.SetContext(Context{Name: "local", Server: "http://127.0.0.1:9090"})
	require.Len(t, got.Contexts, 2)
	c, ok := got.Current()
	require.True(t, ok)
	require.Equal(t, "http://127.0.0.1:9090", c.Server)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string // "" means no file
		wantErr string
		want    *Config
	}{
		{name: "missing file is an empty config", want: New()},
		{
			name:    "valid file",
			content: "apiVersion: warden.dev/v1alpha1\nkind: Config\ncurrentContext: a\ncontexts:\n- name: a\n  server: http://x:1\n",
			want:    &Config{APIVersion: APIVersion, Kind: Kind, CurrentContext: "a", Contexts: []Context{{Name: "a", Server: "http://x:1"}}},
		},
		{name: "wrong kind", content: "apiVersion: warden.dev/v1alpha1\nkind: Other\ncontexts: []\n", wantErr: "kind"},
		{name: "unknown field", content: "apiVersion: warden.dev/v1alpha1\nkind: Config\nbogus: 1\ncontexts: []\n", wantErr: "bogus"},
		{name: "duplicate context", content: "apiVersion: warden.dev/v1alpha1\nkind: Config\ncontexts:\n- name: a\n- name: a\n", wantErr: "duplicate"},
		{name: "not YAML", content: "{{{", wantErr: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if tt.content != "" {
				require.NoError(t, os.WriteFile(Path(home), []byte(tt.content), 0o600))
			}
			got, err := Load(home)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResolvePrecedence(t *testing.T) {
	t.Parallel()
	cfg := New()
	cfg.SetContext(Context{Name: "local", Server: "http://file:8080", Token: "file-token", Namespace: "file-ns"})
	cfg.SetContext(Context{Name: "other", Server: "http://other:8080", Token: "other-token"})
	cfg.CurrentContext = "local"

	tests := []struct {
		name    string
		cfg     *Config
		flags   Overrides
		env     map[string]string
		want    Resolved
		wantErr bool
	}{
		{
			name: "file only",
			cfg:  cfg,
			want: Resolved{Server: "http://file:8080", Token: "file-token", Namespace: "file-ns", Context: "local"},
		},
		{
			name: "env beats file",
			cfg:  cfg,
			env:  map[string]string{EnvServer: "http://env:1", EnvToken: "env-token", EnvNamespace: "env-ns"},
			want: Resolved{Server: "http://env:1", Token: "env-token", Namespace: "env-ns", Context: "local"},
		},
		{
			name:  "flags beat env",
			cfg:   cfg,
			env:   map[string]string{EnvServer: "http://env:1", EnvToken: "env-token"},
			flags: Overrides{Server: "http://flag:2", Token: "flag-token", Namespace: "flag-ns"},
			want:  Resolved{Server: "http://flag:2", Token: "flag-token", Namespace: "flag-ns", Context: "local"},
		},
		{
			name:  "field by field",
			cfg:   cfg,
			env:   map[string]string{EnvToken: "env-token"},
			flags: Overrides{Server: "http://flag:2"},
			want:  Resolved{Server: "http://flag:2", Token: "env-token", Namespace: "file-ns", Context: "local"},
		},
		{
			name:  "context flag",
			cfg:   cfg,
			flags: Overrides{Context: "other"},
			want:  Resolved{Server: "http://other:8080", Token: "other-token", Namespace: DefaultNamespace, Context: "other"},
		},
		{
			name: "context env",
			cfg:  cfg,
			env:  map[string]string{EnvContext: "other"},
			want: Resolved{Server: "http://other:8080", Token: "other-token", Namespace: DefaultNamespace, Context: "other"},
		},
		{name: "unknown context", cfg: cfg, flags: Overrides{Context: "nope"}, wantErr: true},
		{
			name: "empty config uses defaults",
			cfg:  New(),
			want: Resolved{Server: DefaultServer, Namespace: DefaultNamespace},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tt.cfg, tt.flags, envOf(tt.env))
			if tt.wantErr {
				require.ErrorIs(t, err, ErrNoContext)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestHome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "WARDEN_HOME wins", env: map[string]string{EnvHome: "/w", "HOME": "/h"}, want: "/w"},
		{name: "HOME fallback", env: map[string]string{"HOME": "/h"}, want: filepath.Join("/h", ".warden")},
		{name: "nothing", env: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Home(envOf(tt.env))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
