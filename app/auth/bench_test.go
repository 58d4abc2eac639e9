package auth_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/workload"
)

// BenchmarkAuthenticateAuthorize measures what every /v1 request pays
// before its handler: authenticating the bearer credential and one
// authorization decision (authz.Authorizer, memoized per tenant). The
// API key rows include the store lookup by hash on every request (no
// verified-key cache, so revocation is immediate across replicas); the
// workload rows verify an EdDSA JWT, from the verifier's token cache and
// without it. Numbers are in docs/performance.md ("Identity and access").
func BenchmarkAuthenticateAuthorize(b *testing.B) {
	ctx := context.Background()
	now := time.Now
	open := func(b *testing.B, url string) store.Store {
		st, err := backend.Open(ctx, url, backend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	const tenant = "bench"
	secretKey, hash, err := auth.NewAPIKeySecret()
	if err != nil {
		b.Fatal(err)
	}
	withKey := func(b *testing.B, st store.Store) {
		err := st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			return tx.APIKeyInsert(ctx, store.APIKey{ID: "bench", Name: "bench", SecretHash: hash, Namespace: "default",
				Role: auth.RoleEditor, CreatedAt: now()})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// run authenticates header and authorizes a list of agents in
	// namespace default, b.N times.
	run := func(b *testing.B, authn func() *auth.Authenticator, az *authz.Authorizer, header string, verb, object string) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := authn().Authenticate(ctx, header)
			if err != nil {
				b.Fatal(err)
			}
			if err := az.Authorize(ctx, p, verb, "default", object); err != nil {
				b.Fatal(err)
			}
		}
	}

	for _, backendName := range []string{"sqlite", "postgres"} {
		b.Run("apikey/"+backendName, func(b *testing.B) {
			url := "sqlite://" + filepath.Join(b.TempDir(), "w.db")
			if backendName == "postgres" {
				url = pgtest.NewDatabase(b)
			}
			st := open(b, url)
			withKey(b, st)
			a := auth.NewAuthenticator(st, now)
			run(b, func() *auth.Authenticator { return a }, authz.New(st, now), "Bearer "+secretKey, auth.VerbList, "agents")
		})
	}

	st := open(b, "sqlite://"+filepath.Join(b.TempDir(), "w.db"))
	kr, err := secret.NewKeyring(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	issuer, err := workload.NewIssuer(ctx, st, kr, now, workload.Options{Issuer: "http://127.0.0.1:8080"})
	if err != nil {
		b.Fatal(err)
	}
	tok, _, err := issuer.Issue(ctx, workload.IssueParams{Tenant: tenant, Namespace: "default", Agent: "support-bot",
		Environment: "dev", Audience: workload.AudienceControlPlane})
	if err != nil {
		b.Fatal(err)
	}
	az := authz.New(st, now)
	b.Run("workload-jwt/cached", func(b *testing.B) {
		a := auth.NewAuthenticator(st, now, workload.NewVerifier(issuer, workload.AudienceControlPlane, now))
		run(b, func() *auth.Authenticator { return a }, az, "Bearer "+tok, auth.VerbGet, "agents")
	})
	b.Run("workload-jwt/uncached", func(b *testing.B) {
		// A fresh verifier per request: an empty token cache, so every
		// request checks the signature.
		run(b, func() *auth.Authenticator {
			return auth.NewAuthenticator(st, now, workload.NewVerifier(issuer, workload.AudienceControlPlane, now))
		}, az, "Bearer "+tok, auth.VerbGet, "agents")
	})
}
