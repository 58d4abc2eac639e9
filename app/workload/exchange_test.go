package workload

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// fakeStore is a store.Store holding API keys and resources in memory,
// just enough for auth.Authenticator and the exchange's reads.
type fakeStore struct {
	store.Store
	mu      sync.Mutex
	keys    map[string]*store.APIKey // by secret hash
	objects map[string][]*resource.Object
}

func (f *fakeStore) APIKeyLookup(_ context.Context, hash string) (*store.APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[hash]
	if !ok || k.RevokedAt != nil {
		return nil, store.ErrNotFound
	}
	c := *k
	return &c, nil
}

func (f *fakeStore) View(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Reader) error) error {
	return fn(ctx, &fakeReader{objects: f.objects[tenant]})
}

type fakeReader struct {
	store.Reader
	objects []*resource.Object
}

func (r *fakeReader) ResourceList(_ context.Context, p store.ListParams) (*store.ListResult, error) {
	res := &store.ListResult{}
	for _, o := range r.objects {
		if o.Kind == p.Kind && (p.Namespace == "" || o.Metadata.Namespace == p.Namespace) {
			res.Items = append(res.Items, o.DeepCopy())
		}
	}
	return res, nil
}

func deployment(ns, name, agent, env string) *resource.Object {
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindDeployment,
		Metadata: resource.ObjectMeta{Namespace: ns, Name: name},
		Spec:     map[string]any{"agentRef": map[string]any{"name": agent}, "environment": env}}
}

// k8sIssuer is a real in-process OIDC issuer: discovery, JWKS, and RS256
// service-account tokens signed with a generated RSA key.
type k8sIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string
}

func newK8sIssuer(t *testing.T) *k8sIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ki := &k8sIssuer{key: key, kid: "k8s-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": ki.srv.URL, "jwks_uri": ki.srv.URL + "/openid/v1/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(JWKSet{Keys: []JWK{{Kty: "RSA", Kid: ki.kid, Use: "sig", Alg: AlgRS256,
			N: b64.EncodeToString(key.N.Bytes()), E: b64.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	})
	ki.srv = httptest.NewServer(mux)
	t.Cleanup(ki.srv.Close)
	return ki
}

func (ki *k8sIssuer) token(t *testing.T, claims map[string]any, alg string) string {
	t.Helper()
	in := enc(map[string]string{"alg": alg, "kid": ki.kid}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, ki.key, 5, sum[:]) // crypto.SHA256 == 5
	require.NoError(t, err)
	return in + "." + b64.EncodeToString(sig)
}

type exchangeBundle struct {
	*bundle
	app   *fiber.App
	store *fakeStore
	k8s   *k8sIssuer
	key   string
	wide  string
	plain string
}

func setupExchange(t *testing.T) *exchangeBundle {
	t.Helper()
	b := setup(t)
	k8s := newK8sIssuer(t)
	fs := &fakeStore{keys: map[string]*store.APIKey{}, objects: map[string][]*resource.Object{
		"acme": {deployment("support", "triage-dev", "triage", "dev"), deployment("support", "triage-prod", "triage", "prod"),
			deployment("support", "solo-dev", "solo", "dev"), deployment("other", "x", "triage", "staging")},
	}}
	addKey := func(name, ns, agent string) string {
		secret, hash, err := auth.NewAPIKeySecret()
		require.NoError(t, err)
		fs.keys[hash] = &store.APIKey{ID: name, Tenant: "acme", Name: name, SecretHash: hash, Namespace: ns, Role: auth.RoleViewer, Agent: agent}
		return secret
	}
	eb := &exchangeBundle{bundle: b, store: fs, k8s: k8s,
		key: addKey("triage", "support", "triage"), wide: addKey("wide", "*", "triage"), plain: addKey("plain", "support", "")}
	x, err := NewTokenExchange(ExchangeDeps{
		Issuer: b.issuer, APIKeys: auth.NewAuthenticator(fs, b.clock.Now), Store: fs, Now: b.clock.Now,
		HTTPClient: k8s.srv.Client(),
		Kubernetes: []KubernetesIssuer{{Issuer: k8s.srv.URL, Audience: "warden", Tenant: "acme",
			ServiceAccounts: map[string]WorkloadRef{
				"system:serviceaccount:agents:triage": {Namespace: "support", Agent: "triage", Environment: "prod"},
				"system:serviceaccount:agents:solo":   {Namespace: "support", Agent: "solo"},
			}}},
	})
	require.NoError(t, err)
	eb.app = fiber.New()
	eb.app.Post(TokenPath, x.TokenHandler())
	eb.app.Get(JWKSPath, b.issuer.JWKSHandler())
	return eb
}

func (eb *exchangeBundle) post(t *testing.T, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, TokenPath, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := eb.app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestTokenExchange(t *testing.T) {
	t.Parallel()
	eb := setupExchange(t)
	now := eb.clock.Now().Unix()
	sa := func(sub string, mut func(map[string]any)) string {
		c := map[string]any{"iss": eb.k8s.srv.URL, "sub": sub, "aud": []string{"warden"}, "exp": now + 600, "iat": now, "nbf": now}
		if mut != nil {
			mut(c)
		}
		return eb.k8s.token(t, c, AlgRS256)
	}
	apiKey := func(key, env string) map[string]any {
		return map[string]any{"grant_type": GrantAPIKey, "api_key": key, "audience": AudienceToolGateway, "environment": env}
	}
	exch := func(tok string, extra map[string]any) map[string]any {
		m := map[string]any{"grant_type": GrantTokenExchange, "subject_token": tok, "subject_token_type": TokenTypeJWT, "audience": AudienceToolGateway}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	tests := []struct {
		name     string
		body     any
		status   int
		code     string
		wantEnv  string
		wantAg   string
		contains string
	}{
		{name: "api key, dev", body: apiKey(eb.key, "dev"), status: 200, wantEnv: "dev", wantAg: "triage"},
		{name: "api key, prod", body: apiKey(eb.key, "prod"), status: 200, wantEnv: "prod", wantAg: "triage"},
		{name: "api key, env not deployed", body: apiKey(eb.key, "staging"), status: 403, code: apierr.CodeForbidden, contains: "not deployed"},
		{name: "api key, env ambiguous", body: apiKey(eb.key, ""), status: 400, code: apierr.CodeInvalidRequest, contains: "dev, prod"},
		{name: "api key, wrong agent", body: map[string]any{"grant_type": GrantAPIKey, "api_key": eb.key, "audience": AudienceToolGateway, "environment": "dev", "agent": "other"}, status: 403, code: apierr.CodeForbidden},
		{name: "api key, wrong namespace", body: map[string]any{"grant_type": GrantAPIKey, "api_key": eb.key, "audience": AudienceToolGateway, "environment": "dev", "namespace": "other"}, status: 403, code: apierr.CodeForbidden},
		{name: "api key not bound to an agent", body: apiKey(eb.plain, "dev"), status: 403, code: apierr.CodeForbidden, contains: "not bound"},
		{name: "api key for every namespace", body: apiKey(eb.wide, "dev"), status: 403, code: apierr.CodeForbidden},
		{name: "unknown api key", body: apiKey("wk_nope", "dev"), status: 401, code: apierr.CodeUnauthenticated},
		{name: "not an api key", body: apiKey("Bearer x", "dev"), status: 400, code: apierr.CodeInvalidRequest},
		{name: "no audience", body: map[string]any{"grant_type": GrantAPIKey, "api_key": eb.key}, status: 400, code: apierr.CodeInvalidRequest},
		{name: "unknown audience", body: map[string]any{"grant_type": GrantAPIKey, "api_key": eb.key, "audience": "evil"}, status: 400, code: apierr.CodeInvalidRequest},
		{name: "unknown grant", body: map[string]any{"grant_type": "password", "audience": AudienceToolGateway}, status: 400, code: apierr.CodeInvalidRequest},
		{name: "not json", body: "x", status: 400, code: apierr.CodeInvalidRequest},
		{name: "k8s token, mapped env", body: exch(sa("system:serviceaccount:agents:triage", nil), nil), status: 200, wantEnv: "prod", wantAg: "triage"},
		{name: "k8s token, single deployment", body: exch(sa("system:serviceaccount:agents:solo", nil), nil), status: 200, wantEnv: "dev", wantAg: "solo"},
		{name: "k8s token, env other than mapped", body: exch(sa("system:serviceaccount:agents:triage", nil), map[string]any{"environment": "dev"}), status: 403, code: apierr.CodeForbidden},
		{name: "k8s token, unmapped account", body: exch(sa("system:serviceaccount:agents:intruder", nil), nil), status: 403, code: apierr.CodeForbidden},
		{name: "k8s token, expired", body: exch(sa("system:serviceaccount:agents:triage", func(c map[string]any) { c["exp"] = now }), nil), status: 401, code: apierr.CodeUnauthenticated},
		{name: "k8s token, wrong audience", body: exch(sa("system:serviceaccount:agents:triage", func(c map[string]any) { c["aud"] = "kubernetes" }), nil), status: 401, code: apierr.CodeUnauthenticated},
		{name: "k8s token, unknown issuer", body: exch(sa("system:serviceaccount:agents:triage", func(c map[string]any) { c["iss"] = "https://evil" }), nil), status: 401, code: apierr.CodeUnauthenticated},
		{name: "k8s token, tampered", body: exch(strings.Replace(sa("system:serviceaccount:agents:solo", nil), ".", ".e30", 1), nil), status: 401, code: apierr.CodeUnauthenticated},
		{name: "k8s token, alg none", body: exch(enc(map[string]string{"alg": "none", "kid": "k8s-key-1"})+"."+enc(map[string]any{"iss": eb.k8s.srv.URL, "sub": "system:serviceaccount:agents:triage", "aud": "warden", "exp": now + 600})+".", nil), status: 401, code: apierr.CodeUnauthenticated},
		{name: "k8s token, wrong token type", body: exch("x", map[string]any{"subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}), status: 400, code: apierr.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := eb.post(t, tt.body)
			require.Equal(t, tt.status, status, "%s", body)
			if tt.contains != "" {
				require.Contains(t, string(body), tt.contains)
			}
			if status != 200 {
				var e apierr.Body
				require.NoError(t, json.Unmarshal(body, &e), "%s", body)
				require.Equal(t, tt.code, e.Error.Code)
				require.NotContains(t, string(body), eb.key[3:], "never echo a key")
				return
			}
			var r TokenResponse
			require.NoError(t, json.Unmarshal(body, &r))
			require.Equal(t, "Bearer", r.TokenType)
			require.Equal(t, 300, r.ExpiresIn)
			require.Equal(t, TokenTypeJWT, r.IssuedTokenType)
			c, err := eb.verify.VerifyClaims(t.Context(), r.AccessToken)
			require.NoError(t, err)
			require.Equal(t, tt.wantEnv, c.Environment)
			require.Equal(t, tt.wantAg, c.Agent)
			require.Equal(t, "acme", c.Tenant)
			require.Equal(t, "support", c.Namespace)
		})
	}
}

func TestRevokedAPIKeyRefusedAtOnce(t *testing.T) {
	t.Parallel()
	eb := setupExchange(t)
	body := map[string]any{"grant_type": GrantAPIKey, "api_key": eb.key, "audience": AudienceToolGateway, "environment": "dev"}
	status, _ := eb.post(t, body)
	require.Equal(t, 200, status)
	revoked := eb.clock.Now()
	eb.store.mu.Lock()
	eb.store.keys[auth.HashAPIKey(eb.key)].RevokedAt = &revoked
	eb.store.mu.Unlock()
	status, out := eb.post(t, body)
	require.Equal(t, 401, status, "%s", out)
}

func TestRemoteKeySourceOverJWKS(t *testing.T) {
	t.Parallel()
	eb := setupExchange(t)
	var fetches int
	var mu sync.Mutex
	h := adaptor.FiberApp(eb.app)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetches++
		mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)

	// The JWKS document has the documented shape and cache header.
	resp, err := srv.Client().Get(srv.URL + JWKSPath)
	require.NoError(t, err)
	require.Equal(t, "public, max-age=60", resp.Header.Get("Cache-Control"))
	var set JWKSet
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
	resp.Body.Close()
	require.Len(t, set.Keys, 1)
	k := set.Keys[0]
	require.Equal(t, JWK{Kty: "OKP", Crv: "Ed25519", Kid: eb.issuer.active.ID, X: k.X, Use: "sig", Alg: AlgEdDSA}, k)

	// A verifier in another process: iss is the server's base URL.
	i2, err := NewIssuer(t.Context(), eb.keys, eb.keyring, eb.clock.Now, Options{Issuer: srv.URL})
	require.NoError(t, err)
	remote := NewRemoteKeySource(srv.URL+JWKSPath, srv.Client(), eb.clock.Now)
	v := NewVerifier(remote, AudienceToolGateway, eb.clock.Now)
	tok, _, err := i2.Issue(t.Context(), params)
	require.NoError(t, err)
	require.True(t, v.Accepts(tok))
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)

	// After a rotation the new kid is unknown: one refetch finds it, but
	// unknown kids do not refetch more than once per 10 s.
	eb.clock.Add(time.Minute)
	require.NoError(t, i2.Rotate(t.Context()))
	require.NoError(t, eb.issuer.Refresh(t.Context()))
	tok2, _, err := i2.Issue(t.Context(), params)
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), tok2)
	require.NoError(t, err)
	mu.Lock()
	before := fetches
	mu.Unlock()
	for range 5 {
		_, err = v.Verify(t.Context(), forge(t, ed25519PrivateFor(t, eb.bundle, eb.issuer.active.ID), "unknown-kid", eb.clock.Now()))
		require.ErrorIs(t, err, ErrInvalidToken)
	}
	mu.Lock()
	require.LessOrEqual(t, fetches-before, 1)
	mu.Unlock()

	// A token naming another issuer is not routed to this verifier.
	require.False(t, v.Accepts(eb.issue(t, params)))
}
