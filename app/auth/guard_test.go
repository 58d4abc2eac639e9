package auth_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// TestTenantGuard: a credential naming another tenant is refused with 403
// and the refusal is audited in its own tenant, never in the one named;
// refusals are coalesced to one record per caller, tenant named and
// minute, so a flood does not grow the log.
func TestTenantGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "w.db"), backend.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var mu sync.Mutex
	clock := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	g := auth.NewTenantGuard(st, now, slog.New(slog.DiscardHandler))
	ann := auth.Principal{Tenant: "acme", Subject: "apikey:ci", Kind: auth.KindAPIKey}
	bob := auth.Principal{Tenant: "acme", Subject: "user:bob@acme.example", Kind: auth.KindUser}

	records := func(tenant string) []string {
		t.Helper()
		var out []string
		require.NoError(t, st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			recs, err := r.AuditList(ctx, store.AuditListParams{Limit: 1000})
			for _, rec := range recs {
				out = append(out, rec.Actor+" "+rec.Verb+" "+rec.Resource+" "+rec.Outcome)
			}
			return err
		}))
		return out
	}

	for _, tc := range []struct {
		name   string
		p      auth.Principal
		want   string
		denied bool
	}{
		{"no header", ann, "", false},
		{"its own tenant", ann, "acme", false},
		{"another tenant", ann, "globex", true},
		{"the same again", ann, "globex", true},
		{"a third tenant", ann, "initech", true},
		{"another caller", bob, "globex", true},
		{"a very long name", bob, strings.Repeat("x", 500), true},
	} {
		err := g.Check(ctx, tc.p, tc.want, "control plane")
		if !tc.denied {
			require.NoError(t, err, tc.name)
			continue
		}
		e, ok := apierr.As(err)
		require.True(t, ok, "%s: %v", tc.name, err)
		require.Equal(t, apierr.CodeForbidden, e.Code, tc.name)
	}
	// A flood within the minute adds nothing.
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { _ = g.Check(ctx, ann, "globex", "tool gateway") })
	}
	wg.Wait()
	long := "tenants/" + strings.Repeat("x", 63) + "…"
	require.ElementsMatch(t, []string{
		"apikey:ci act-in tenants/globex " + audit.OutcomeDenied,
		"apikey:ci act-in tenants/initech " + audit.OutcomeDenied,
		"user:bob@acme.example act-in tenants/globex " + audit.OutcomeDenied,
		"user:bob@acme.example act-in " + long + " " + audit.OutcomeDenied,
	}, records("acme"))
	require.Empty(t, records("globex"), "nothing is written in the tenant named")

	// The next minute, the same refusal is recorded once more.
	mu.Lock()
	clock = clock.Add(time.Minute)
	mu.Unlock()
	for range 3 {
		require.Error(t, g.Check(ctx, ann, "globex", "control plane"))
	}
	require.Len(t, records("acme"), 5)
}
