package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// Keys that make faultyStore misbehave while it looks them up.
const (
	panicKey = "wk_panicpanicpanicpanicpanicpanic"
	faultKey = "wk_faultfaultfaultfaultfaultfault"
)

// faultyStore panics, or fails with an error that is no store sentinel,
// when one of the keys above is looked up: a handler that panics, or a
// fault the client must see as 500 Internal with a request id.
type faultyStore struct {
	store.Store
}

func (f faultyStore) APIKeyLookup(ctx context.Context, hash string) (*store.APIKey, error) {
	switch hash {
	case auth.HashAPIKey(panicKey):
		panic("faulty store: lookup of the panic key")
	case auth.HashAPIKey(faultKey):
		return nil, errors.New("faulty store: disk on fire")
	}
	return f.Store.APIKeyLookup(ctx, hash)
}

type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hardened is a server with both listeners, short timeouts and a faulty
// store.
type hardened struct {
	control, gateway string // base URLs
	key              string
	logs             *syncLog
	timeouts         listener.Timeouts
	bundle           *bundle
}

func setupHardened(t *testing.T) *hardened {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "w.db"), backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	logs := &syncLog{}
	to := listener.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 200 * time.Millisecond, Idle: 200 * time.Millisecond}
	ls, err := server.Listen("127.0.0.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := server.New(server.Config{
		Store: faultyStore{st}, GatewayAddr: ls.Gateway.Addr().String(), Timeouts: to, BookmarkInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	control, gateway := "http://"+ls.Control.Addr().String(), "http://"+ls.Gateway.Addr().String()
	go func() { done <- srv.ServeListeners(sctx, ls) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &hardened{control: control, gateway: gateway, key: key, logs: logs, timeouts: to,
		bundle: &bundle{url: control, key: key, store: st, srv: srv}}
}

func getAs(t *testing.T, hc *http.Client, url, key string) (*http.Response, apierr.Body) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var body apierr.Body
	if res.StatusCode >= 400 {
		require.NoError(t, json.Unmarshal(b, &body), "%s", b)
	}
	return res, body
}

// TestEveryListenerSurvivesAPanic panics a handler on each listener and
// then makes a normal call on the same connection.
func TestEveryListenerSurvivesAPanic(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	for name, base := range map[string]string{"control plane": h.control + "/v1/namespaces", "tool gateway": h.gateway + "/v1/tool-calls/nope?namespace=default"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			res, body := getAs(t, hc, base, panicKey)
			require.Equal(t, http.StatusInternalServerError, res.StatusCode)
			id := res.Header.Get("X-Request-Id")
			require.NotEmpty(t, id)
			require.Equal(t, apierr.CodeInternal, body.Error.Code)
			require.Contains(t, body.Error.Message, "request id "+id)
			require.NotContains(t, body.Error.Message, "faulty store")
			require.Contains(t, h.logs.String(), "requestId="+id)
			require.Contains(t, h.logs.String(), "panic in handler")

			res, _ = getAs(t, hc, base, h.key)
			require.NotEqual(t, http.StatusInternalServerError, res.StatusCode, "the listener keeps serving")
			require.Less(t, res.StatusCode, 500)
		})
	}
}

// TestInternalErrorsNameTheRequest checks that a 500 from either listener
// names its request id, in the header and the message, and that /v1
// answers are neither sniffed nor cached.
func TestInternalErrorsNameTheRequest(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	for name, url := range map[string]string{"control plane": h.control + "/v1/namespaces", "tool gateway": h.gateway + "/v1/tool-calls/nope?namespace=default"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, body := getAs(t, http.DefaultClient, url, faultKey)
			require.Equal(t, http.StatusInternalServerError, res.StatusCode)
			id := res.Header.Get("X-Request-Id")
			require.NotEmpty(t, id)
			require.Equal(t, "internal error (request id "+id+")", body.Error.Message)
			require.NotContains(t, body.Error.Message, "disk on fire")
			require.Contains(t, h.logs.String(), "requestId="+id)
			for _, key := range []string{faultKey, h.key, "wk_unknown"} {
				res, _ := getAs(t, http.DefaultClient, url, key)
				require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), "status %d", res.StatusCode)
				require.Equal(t, "no-store", res.Header.Get("Cache-Control"), "status %d", res.StatusCode)
			}
		})
	}
}

// TestSlowLorisIsCutOnEveryListener sends headers byte by byte to each
// listener: the connection is closed after the read-header timeout.
func TestSlowLorisIsCutOnEveryListener(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	for name, base := range map[string]string{"control plane": h.control, "tool gateway": h.gateway} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			start := time.Now()
			go func() {
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 5000) + "\r\n\r\n") {
					if _, err := conn.Write([]byte{b}); err != nil {
						return
					}
					<-tick.C
				}
			}()
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			got, err := io.ReadAll(conn)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server never closed the slow connection")
			require.GreaterOrEqual(t, time.Since(start), h.timeouts.ReadHeader)
			require.NotContains(t, string(got), "200 OK")
		})
	}
}

// TestWatchOutlivesTheTimeouts keeps a watch stream open for several times
// every listener timeout and then sees a change arrive on it.
func TestWatchOutlivesTheTimeouts(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	req, err := http.NewRequest(http.MethodGet, h.control+"/v1/resources?watch=true", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	lines := bufio.NewScanner(res.Body)
	// Bookmarks come every 50 ms: read them until the stream is older than
	// three times the longest timeout.
	outlive := 3 * max(h.timeouts.ReadHeader, h.timeouts.Read, h.timeouts.Idle)
	for start := time.Now(); time.Since(start) < outlive; {
		require.True(t, lines.Scan(), "the stream ended: %v", lines.Err())
	}
	r := h.bundle.apply(t, "apiVersion: warden.dev/v1alpha1\nkind: Environment\nmetadata: {name: qa, namespace: default}\nspec: {}\n")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"name":"qa"`) {
			return
		}
	}
	t.Fatalf("the change never arrived: %v", lines.Err())
}

// TestRequestedTenantMustBeTheCredentials asks, on both listeners, for a
// tenant the credential does not belong to: 403, never its own tenant.
func TestRequestedTenantMustBeTheCredentials(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	for name, url := range map[string]string{"control plane": h.control + "/v1/namespaces", "tool gateway": h.gateway + "/v1/tool-calls/nope?namespace=default"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for tenant, want := range map[string]int{"globex": http.StatusForbidden, server.LocalTenant: http.StatusOK} {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+h.key)
				req.Header.Set(auth.HeaderTenant, tenant)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, _ := io.ReadAll(res.Body)
				_ = res.Body.Close()
				if want == http.StatusOK {
					require.NotEqual(t, http.StatusForbidden, res.StatusCode, "%s", b)
					continue
				}
				require.Equal(t, want, res.StatusCode, "%s", b)
				require.Contains(t, string(b), `"code":"Forbidden"`)
			}
		})
	}
}

// TestForeignTenantRefusalsAreAudited floods both listeners with one
// credential naming a tenant it does not belong to: every request is
// refused, the refusals are audited in the credential's own tenant and
// coalesced (one record per caller, tenant and minute: at most two when
// the flood straddles a minute), and nothing is written in the tenant
// named.
func TestForeignTenantRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	h := setupHardened(t)
	for range 10 {
		for _, url := range []string{h.control + "/v1/namespaces", h.gateway + "/v1/tool-calls/nope?namespace=default"} {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+h.key)
			req.Header.Set(auth.HeaderTenant, "globex")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusForbidden, res.StatusCode, url)
		}
	}
	refusals := func(tenant string) []audit.Record {
		var out []audit.Record
		require.NoError(t, h.bundle.store.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			out, err = r.AuditList(ctx, store.AuditListParams{Verb: auth.VerbActIn, Limit: 100})
			return err
		}))
		return out
	}
	recs := refusals(server.LocalTenant)
	require.NotEmpty(t, recs, "the refusal is audited in the caller's tenant")
	require.LessOrEqual(t, len(recs), 2, "twenty refusals are coalesced: %+v", recs)
	require.Equal(t, "tenants/globex", recs[0].Resource)
	require.Equal(t, audit.OutcomeDenied, recs[0].Outcome)
	require.Equal(t, "apikey:admin", recs[0].Actor)
	require.Empty(t, refusals("globex"))
}

// TestSecretMergePatch patches a Secret's values: a new value is sealed,
// a null removes its key, the untouched key keeps its ciphertext, and no
// value is returned.
func TestSecretMergePatch(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	r := b.apply(t, "apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: stripe\nspec:\n  data:\n    keep: k33p\n    change: old-value\n    drop: dr0p\n")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	sealed := func() map[string]any {
		var out map[string]any
		require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, rd store.Reader) error {
			o, err := rd.ResourceGet(ctx, resource.Key{Kind: resource.KindSecret, Namespace: "default", Name: "stripe"})
			require.NoError(t, err)
			require.NotContains(t, o.Spec, "data")
			out = o.Spec["sealed"].(map[string]any)
			return nil
		}))
		return out
	}
	before := sealed()

	r = b.do(t, http.MethodPatch, "/v1/namespaces/default/secrets/stripe", "application/merge-patch+json",
		[]byte(`{"spec":{"data":{"change":"new-value","drop":null,"add":"added-value"}},"metadata":{"labels":{"team":"billing"}}}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	for _, v := range []string{"k33p", "new-value", "old-value", "added-value", "sealed"} {
		require.NotContains(t, string(r.body), v)
	}
	after := sealed()
	require.ElementsMatch(t, []string{"keep", "change", "add"}, keys(after))
	require.Equal(t, before["keep"], after["keep"], "an untouched value keeps its ciphertext")
	require.NotEqual(t, before["change"], after["change"])

	// Planting sealed values through a patch is refused as through apply.
	r = b.do(t, http.MethodPatch, "/v1/namespaces/default/secrets/stripe", "application/merge-patch+json", []byte(`{"spec":{"sealed":{"k":"AAAA"}}}`))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "spec.sealed is written by Warden")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
