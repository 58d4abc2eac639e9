package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/app/workload"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a memory service on a real store with one tenant holding
// API keys of each role, an agent whose manifest names memory "notes",
// and an agent whose manifest names none.
type harness struct {
	t      testing.TB
	st     store.Store
	svc    *memory.Service
	app    *fiber.App
	clock  *clock
	issuer *workload.Issuer
	tenant string
	// keys are API key secrets by role.
	keys map[string]string
	mu   sync.Mutex
	evs  []events.Event
}

// openStore opens a fresh SQLite store.
func openSQLite(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
}

func newHarness(t testing.TB, storeURL string, cfg memory.Config) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	kr, err := secret.NewKeyring(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	issuer, err := workload.NewIssuer(ctx, st, kr, clk.Now, workload.Options{Issuer: "http://warden.test"})
	require.NoError(t, err)
	h := &harness{t: t, st: st, clock: clk, issuer: issuer, tenant: storetest.NewTenant(), keys: map[string]string{}}
	bus := events.NewBus()
	bus.Subscribe(func(ev events.Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.evs = append(h.evs, ev)
	})
	cfg.Store, cfg.Bus, cfg.Now = st, bus, clk.Now
	cfg.Authn = auth.NewAuthenticator(st, clk.Now, workload.NewVerifier(issuer, workload.AudienceMemory, clk.Now))
	cfg.Authz = authz.New(st, clk.Now)
	h.svc, err = memory.New(cfg)
	require.NoError(t, err)
	h.app = h.svc.App()
	h.seed(h.tenant)
	return h
}

// seed gives tenant its keys, Memories and agents.
func (h *harness) seed(tenant string) {
	t := h.t
	t.Helper()
	require.NoError(t, h.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for _, role := range []string{auth.RoleViewer, auth.RoleEditor, auth.RoleAdmin} {
			sec, hash, err := auth.NewAPIKeySecret()
			require.NoError(t, err)
			if err := tx.APIKeyInsert(ctx, store.APIKey{ID: role + "-" + tenant, Name: role, SecretHash: hash, Namespace: "default",
				Role: role, CreatedAt: h.clock.Now()}); err != nil {
				return err
			}
			if tenant == h.tenant {
				h.keys[role] = sec
			} else {
				h.keys[tenant+"/"+role] = sec
			}
		}
		mems := []struct {
			name string
			spec map[string]any
		}{
			{"notes", map[string]any{"maxItems": int64(5), "ttl": "1h"}},
			{"shared", map[string]any{"scope": "namespace", "redactPII": false}},
			{"chats", map[string]any{"scope": "conversation"}},
			{"digest", map[string]any{"scope": "namespace", "summarize": map[string]any{"keepRecent": int64(1), "policy": "delete"}}},
			{"modeled", map[string]any{"scope": "namespace", "summarize": map[string]any{"model": "gpt-test", "keepRecent": int64(0)}}},
		}
		for _, m := range mems {
			if _, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindMemory, "default", m.name, nil, m.spec)); err != nil {
				return err
			}
		}
		for agent, mem := range map[string]string{"bot": "notes", "chatter": "chats", "other": "", "sharer": "shared"} {
			a, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindAgent, "default", agent, nil, map[string]any{}))
			if err != nil {
				return err
			}
			spec := map[string]any{"agent": map[string]any{"name": agent, "generation": int64(1)}}
			if mem != "" {
				spec["memories"] = map[string]any{"working": map[string]any{"endpoint": "http://memory.test", "namespace": "default", "name": mem}}
			}
			if _, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindCompiledAgentManifest, "default", agent+"-g1", nil, spec)); err != nil {
				return err
			}
			if _, err := tx.ResourceUpdateStatus(ctx, resource.Key{Kind: resource.KindAgent, Namespace: "default", Name: agent},
				map[string]any{"compiledManifest": agent + "-g1"}, a.Metadata.ResourceVersion); err != nil {
				return err
			}
		}
		return nil
	}))
}

// token returns a workload token of tenant's agent for audience.
func (h *harness) token(tenant, agent, audience string) string {
	tok, _, err := h.issuer.Issue(context.Background(), workload.IssueParams{Tenant: tenant, Namespace: "default", Agent: agent, Audience: audience})
	require.NoError(h.t, err)
	return tok
}

// do sends a request with bearer cred and returns status and decoded body.
func (h *harness) do(method, path, cred string, body any) (int, map[string]any, string) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := h.app.Test(req, -1)
	require.NoError(h.t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, string(raw)
}

// events returns the published events of type typ.
func (h *harness) events(typ string) []events.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []events.Event
	for _, e := range h.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func itemsOf(body map[string]any) []map[string]any {
	raw, _ := body["items"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i], _ = r.(map[string]any)
	}
	return out
}

func textsOf(body map[string]any) []string {
	var out []string
	for _, it := range itemsOf(body) {
		s, _ := it["text"].(string)
		out = append(out, s)
	}
	return out
}

var _ = http.StatusOK
