package trace_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/app/trace"
)

// backend opens a store of one kind for a test.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

func openSQLite(t testing.TB) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warden.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func openPostgres(t testing.TB) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), postgres.Options{MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

var backends = []backend{{"sqlite", func(t *testing.T) store.Store { return openSQLite(t) }}, {"postgres", func(t *testing.T) store.Store { return openPostgres(t) }}}

// harness is a trace service serving on loopback listeners.
type harness struct {
	st       store.Store
	svc      *trace.Service
	queryURL string
	httpURL  string
	grpcAddr string
}

// newHarness serves a trace service over st until the test ends.
func newHarness(t testing.TB, st store.Store, mod func(*trace.Config)) *harness {
	t.Helper()
	authn := auth.NewAuthenticator(st, time.Now)
	cfg := trace.Config{Store: st, Ingest: authn, Query: authn, Authz: authz.New(st, nil), Writers: 2}
	if mod != nil {
		mod(&cfg)
	}
	svc, err := trace.New(cfg)
	require.NoError(t, err)
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return ln
	}
	ls := trace.Listeners{Query: listen(), OTLPHTTP: listen(), OTLPGRPC: listen()}
	h := &harness{st: st, svc: svc, queryURL: "http://" + ls.Query.Addr().String(), httpURL: "http://" + ls.OTLPHTTP.Addr().String(),
		grpcAddr: ls.OTLPGRPC.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ls) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		svc.Close()
	})
	return h
}

// apiKey creates tenant (when new) and an API key of role in namespace ns
// and returns its secret.
func apiKey(t testing.TB, st store.Store, tenant, name, ns, role, agent string) string {
	t.Helper()
	ctx := context.Background()
	_ = st.TenantCreate(ctx, store.TenantRecord{ID: tenant, CreatedAt: time.Now()})
	secret, hash, err := auth.NewAPIKeySecret()
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyInsert(ctx, store.APIKey{ID: tenant + "-" + name, Name: name, SecretHash: hash, Namespace: ns, Role: role, Agent: agent, CreatedAt: time.Now()})
	}))
	return secret
}

// get calls the query API and decodes a 200 answer into out.
func (h *harness) get(t testing.TB, key, path string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.queryURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK && out != nil {
		require.NoError(t, json.Unmarshal(b, out), string(b))
	}
	return resp.StatusCode, string(b)
}

// post sends body to the ingest port.
func (h *harness) post(t *testing.T, key, path, contentType string, body io.Reader, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.httpURL+path, body)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// spanCount counts the stored spans of tenant.
func spanCount(t testing.TB, st store.Store, tenant string) int {
	t.Helper()
	rows, err := st.SpanList(context.Background(), tenant, store.SpanFilter{Status: -1})
	require.NoError(t, err)
	return len(rows)
}

func newTenant() string { return strings.ReplaceAll(storetest.NewTenant(), "_", "-") }
