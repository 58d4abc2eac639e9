package memory_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

func TestScenarios(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), memory.Config{})
	bot := h.token(h.tenant, "bot", workload.AudienceMemory)
	// An item to find and delete.
	st, body, raw := h.do("POST", "/v1/memory/notes/write", bot, map[string]any{"text": "the customer prefers email"})
	require.Equal(t, http.StatusCreated, st, raw)
	itemID, _ := body["id"].(string)
	require.NotEmpty(t, itemID)

	tests := []struct {
		name, method, path, cred string
		body                     any
		status                   int
		contains, notContains    string
	}{
		{"no credential", "POST", "/v1/memory/notes/query", "", map[string]any{}, 401, "Unauthenticated", ""},
		{"bad credential", "POST", "/v1/memory/notes/query", "wk_nope", map[string]any{}, 401, "Unauthenticated", ""},
		{"token for another audience", "POST", "/v1/memory/notes/query", h.token(h.tenant, "bot", workload.AudienceToolGateway), map[string]any{}, 401, "Unauthenticated", ""},
		{"agent queries its memory", "POST", "/v1/memory/notes/query", bot, map[string]any{"text": "email"}, 200, "prefers email", ""},
		{"agent query without name segment", "POST", "/v1/memory/query", bot, map[string]any{"memory": "notes"}, 200, "prefers email", ""},
		{"agent writes without name segment", "POST", "/v1/memory/write", bot, map[string]any{"memory": "notes", "text": "second"}, 201, `"id":"mi-`, ""},
		{"agent reads a memory its manifest does not name", "POST", "/v1/memory/shared/query", bot, map[string]any{}, 403, "does not name memory", ""},
		{"agent without memory", "POST", "/v1/memory/notes/write", h.token(h.tenant, "other", workload.AudienceMemory), map[string]any{"text": "x"}, 403, "Forbidden", ""},
		{"agent of another namespace via query", "POST", "/v1/memory/notes/query?namespace=team", bot, map[string]any{}, 403, "Forbidden", ""},
		{"agent uses another agent's scope", "POST", "/v1/memory/notes/query", bot, map[string]any{"scope": map[string]any{"agent": "other"}}, 403, "Forbidden", ""},
		{"viewer reads", "POST", "/v1/memory/notes/query", h.keys["viewer"], map[string]any{}, 200, "prefers email", ""},
		{"viewer may not write", "POST", "/v1/memory/notes/write", h.keys["viewer"], map[string]any{"text": "x", "scope": map[string]any{"agent": "bot"}}, 403, "may not write", ""},
		{"viewer may not delete", "DELETE", "/v1/memory/notes/items/" + itemID, h.keys["viewer"], nil, 403, "Forbidden", ""},
		{"viewer may not summarize", "POST", "/v1/memory/shared/summarize", h.keys["viewer"], map[string]any{}, 403, "Forbidden", ""},
		{"editor writes for an agent", "POST", "/v1/memory/notes/write", h.keys["editor"], map[string]any{"text": "from ops", "scope": map[string]any{"agent": "bot"}}, 201, "from ops", ""},
		{"editor must name the agent of an agent-scoped memory", "POST", "/v1/memory/notes/write", h.keys["editor"], map[string]any{"text": "x"}, 400, "scope.agent", ""},
		{"conversation scope needs a conversation", "POST", "/v1/memory/chats/write", h.token(h.tenant, "chatter", workload.AudienceMemory), map[string]any{"text": "x"}, 400, "scope.conversation", ""},
		{"unknown memory", "POST", "/v1/memory/nothing/query", h.keys["admin"], map[string]any{}, 404, "NotFound", ""},
		{"unknown item", "DELETE", "/v1/memory/notes/items/mi-none", h.keys["admin"], nil, 404, "NotFound", ""},
		{"empty text", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": "  "}, 400, "text is required", ""},
		{"unknown field", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": "x", "colour": "red"}, 400, "InvalidRequest", ""},
		{"not JSON", "POST", "/v1/memory/notes/write", bot, "{", 400, "InvalidRequest", ""},
		{"bad ttl", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": "x", "ttl": "soon"}, 400, "ttl", ""},
		{"path and body disagree", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": "x", "memory": "shared"}, 400, "the path", ""},
		{"no memory named", "POST", "/v1/memory/write", bot, map[string]any{"text": "x"}, 400, "memory is required", ""},
		{"bad memory name", "POST", "/v1/memory/Not_A_Name/query", bot, map[string]any{}, 400, "DNS-1123", ""},
		{"body too large", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": strings.Repeat("x", 300<<10)}, 413, "PayloadTooLarge", ""},
		{"text too long", "POST", "/v1/memory/notes/write", bot, map[string]any{"text": strings.Repeat("x", memory.MaxTextBytes+1)}, 400, "longer than", ""},
		{"bad limit", "POST", "/v1/memory/notes/query", bot, map[string]any{"limit": 5000}, 400, "limit", ""},
		{"bad filter", "POST", "/v1/memory/notes/query", bot, map[string]any{"metadata": map[string]any{"k": []any{1}}}, 400, "metadata filter", ""},
		{"bad since", "POST", "/v1/memory/notes/query", bot, map[string]any{"since": "yesterday"}, 400, "since", ""},
		{"person without namespace", "POST", "/v1/memory/notes/query?namespace=Bad!", h.keys["admin"], map[string]any{}, 400, "namespace", ""},
		{"agent deletes another agent's item", "DELETE", "/v1/memory/notes/items/" + itemID, h.token(h.tenant, "sharer", workload.AudienceMemory), nil, 403, "Forbidden", ""},
		{"agent deletes its item", "DELETE", "/v1/memory/notes/items/" + itemID, bot, nil, 204, "", ""},
		{"deleted item is gone", "POST", "/v1/memory/notes/query", bot, map[string]any{"text": "email"}, 200, `"count":0`, "prefers email"},
	}
	for _, tc := range tests {
		st, _, raw := h.do(tc.method, tc.path, tc.cred, tc.body)
		require.Equal(t, tc.status, st, "%s: %s", tc.name, raw)
		if tc.contains != "" {
			require.Contains(t, raw, tc.contains, tc.name)
		}
		if tc.notContains != "" {
			require.NotContains(t, raw, tc.notContains, tc.name)
		}
		if st >= 400 {
			require.Contains(t, raw, `"error":{"code"`, tc.name)
		}
	}

	// Every authenticated call was audited, refusals as denied.
	var recs []audit.Record
	require.NoError(t, h.st.View(context.Background(), h.tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		recs, err = r.AuditList(ctx, store.AuditListParams{Limit: 1000})
		return err
	}))
	verbs := map[string]int{}
	denied := 0
	for _, r := range recs {
		verbs[r.Verb]++
		if r.Outcome == audit.OutcomeDenied {
			denied++
		}
	}
	require.Positive(t, verbs["memory/write"])
	require.Positive(t, verbs["memory/query"])
	require.Positive(t, verbs["memory/delete"])
	require.Equal(t, 8, denied, "the 403 scenarios")
	require.Equal(t, -1, audit.Verify(recs, ""))
}

func TestWriteQueryRanking(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), memory.Config{})
	ed := h.keys["editor"]
	for _, it := range []map[string]any{
		{"text": "The refund policy allows refunds within 30 days", "metadata": map[string]any{"topic": "billing"}},
		{"text": "Shipping to Canada takes five days", "metadata": map[string]any{"topic": "shipping"}},
		{"text": "Refund refund refund: customers love refunds", "metadata": map[string]any{"topic": "billing", "vip": true}},
		{"text": "The weather is nice", "metadata": map[string]any{"topic": "smalltalk"}},
	} {
		st, _, raw := h.do("POST", "/v1/memory/shared/write", ed, it)
		require.Equal(t, 201, st, raw)
		h.clock.Advance(time.Second)
	}
	tests := []struct {
		name  string
		query map[string]any
		want  []string
	}{
		{"recency without text", map[string]any{"limit": 2}, []string{"The weather is nice", "Refund refund refund: customers love refunds"}},
		{"bm25 ranks term frequency", map[string]any{"text": "refund"}, []string{"Refund refund refund: customers love refunds", "The refund policy allows refunds within 30 days"}},
		{"no match", map[string]any{"text": "zebra"}, nil},
		{"metadata filter", map[string]any{"metadata": map[string]any{"topic": "billing", "vip": true}}, []string{"Refund refund refund: customers love refunds"}},
		{"text and filter", map[string]any{"text": "days", "metadata": map[string]any{"topic": "shipping"}}, []string{"Shipping to Canada takes five days"}},
		{"since", map[string]any{"since": "2s"}, []string{"The weather is nice", "Refund refund refund: customers love refunds"}},
	}
	for _, tc := range tests {
		st, body, raw := h.do("POST", "/v1/memory/shared/query", ed, tc.query)
		require.Equal(t, 200, st, raw)
		require.Equal(t, tc.want, textsOf(body), tc.name)
		if _, ok := tc.query["text"]; ok && len(tc.want) > 1 {
			items := itemsOf(body)
			require.Greater(t, items[0]["score"].(float64), items[1]["score"].(float64), tc.name)
		}
	}
	require.Len(t, h.events(events.MemoryWritten), 4)
	reads := h.events(events.MemoryRead)
	require.Len(t, reads, len(tests))
	require.Equal(t, "Memory/shared", reads[0].Subject)
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), memory.Config{})
	bot := h.token(h.tenant, "bot", workload.AudienceMemory)
	st, body, raw := h.do("POST", "/v1/memory/notes/write", bot, map[string]any{
		"text": "Call jane.doe@example.com about the order", "metadata": map[string]any{"contact": "jane.doe@example.com", "n": 3}})
	require.Equal(t, 201, st, raw)
	require.NotContains(t, raw, "jane.doe@example.com")
	require.Contains(t, body["text"], "[REDACTED:EMAIL]")
	require.EqualValues(t, 2, body["redactions"])
	_, _, raw = h.do("POST", "/v1/memory/notes/query", bot, map[string]any{})
	require.NotContains(t, raw, "jane.doe@example.com", "nothing unredacted was stored")
	// A Memory with redactPII: false keeps the text.
	st, _, raw = h.do("POST", "/v1/memory/shared/write", h.keys["editor"], map[string]any{"text": "mail jane.doe@example.com"})
	require.Equal(t, 201, st, raw)
	require.Contains(t, raw, "jane.doe@example.com")
	ev := h.events(events.MemoryWritten)[0]
	require.EqualValues(t, 2, ev.Data["redactions"])
	b, _ := json.Marshal(ev)
	require.NotContains(t, string(b), "jane.doe", "events carry no item text")
}

func TestTTLAndCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), memory.Config{})
	// Tokens live 5 minutes on the test clock: each request gets a fresh one.
	bot := h.token(h.tenant, "bot", workload.AudienceMemory)
	write := func(text, ttl string) {
		bot := h.token(h.tenant, "bot", workload.AudienceMemory)
		body := map[string]any{"text": text}
		if ttl != "" {
			body["ttl"] = ttl
		}
		st, _, raw := h.do("POST", "/v1/memory/notes/write", bot, body)
		require.Equal(t, 201, st, raw)
		h.clock.Advance(time.Millisecond)
	}
	// spec.ttl is 1h: a longer request ttl is cut to it.
	st, body, raw := h.do("POST", "/v1/memory/notes/write", bot, map[string]any{"text": "long", "ttl": "48h"})
	require.Equal(t, 201, st, raw)
	created, _ := time.Parse(time.RFC3339Nano, body["createdAt"].(string))
	expires, _ := time.Parse(time.RFC3339Nano, body["expiresAt"].(string))
	require.Equal(t, time.Hour, expires.Sub(created))
	h.clock.Advance(time.Millisecond)
	write("short", "10m")
	query := func() []string {
		bot := h.token(h.tenant, "bot", workload.AudienceMemory)
		st, body, raw := h.do("POST", "/v1/memory/notes/query", bot, map[string]any{"limit": 100})
		require.Equal(t, 200, st, raw)
		return textsOf(body)
	}
	require.Equal(t, []string{"short", "long"}, query())
	h.clock.Advance(11 * time.Minute)
	require.Equal(t, []string{"long"}, query(), "the 10m item expired")
	h.clock.Advance(time.Hour)
	require.Empty(t, query(), "spec.ttl expired the other")
	// maxItems is 5: the oldest go.
	for _, s := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		write(s, "")
	}
	require.Equal(t, []string{"a7", "a6", "a5", "a4", "a3"}, query())
	written := h.events(events.MemoryWritten)
	require.EqualValues(t, 1, written[len(written)-1].Data["trimmed"])
}

func TestSummarizeExtractive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), memory.Config{})
	ed := h.keys["editor"]
	texts := []string{
		"The customer Acme wants invoices in euros. The order ships Monday.",
		"Acme asked again about invoices in euros.",
		"Lunch was pasta.",
		"Remember: Acme invoices must be in euros from March.",
	}
	for _, s := range texts {
		st, _, raw := h.do("POST", "/v1/memory/digest/write", ed, map[string]any{"text": s})
		require.Equal(t, 201, st, raw)
		h.clock.Advance(time.Second)
	}
	st, body, raw := h.do("POST", "/v1/memory/digest/summarize", ed, map[string]any{})
	require.Equal(t, 200, st, raw)
	require.Equal(t, "extractive", body["method"])
	require.Equal(t, "delete", body["policy"])
	require.EqualValues(t, 3, body["summarized"], "keepRecent 1 leaves the newest")
	sum := body["summary"].(map[string]any)
	require.Contains(t, sum["text"], "invoices in euros")
	require.Equal(t, true, sum["summary"])
	// Policy delete: the three are gone; the summary and the newest stay,
	// the summary in the place of the items it replaced.
	st, body, raw = h.do("POST", "/v1/memory/digest/query", ed, map[string]any{"includeSummarized": true})
	require.Equal(t, 200, st, raw)
	require.Len(t, itemsOf(body), 2)
	require.Equal(t, texts[3], textsOf(body)[0])
	require.Equal(t, true, itemsOf(body)[1]["summary"])
	// Nothing left to compact.
	st, body, raw = h.do("POST", "/v1/memory/digest/summarize", ed, map[string]any{})
	require.Equal(t, 200, st, raw)
	require.EqualValues(t, 0, body["summarized"])
	require.Nil(t, body["summary"])
}

func TestSummarizeModel(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var fail atomic.Bool
	var gotAuth, gotModel atomic.Value
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"error":{"message":"provider down"}}`))
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", 400)
			return
		}
		gotAuth.Store(r.Header.Get("Authorization"))
		gotModel.Store(req.Model)
		n := strings.Count(req.Messages[1].Content, "\n")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "Summary of " + strings.Repeat("I", n) + " items; mail ops@example.com"}}},
		})
	}))
	t.Cleanup(router.Close)
	h := newHarness(t, openSQLite(t), memory.Config{ModelRouterURL: router.URL})
	ed := h.keys["editor"]
	for _, s := range []string{"one", "two", "three"} {
		st, _, raw := h.do("POST", "/v1/memory/modeled/write", ed, map[string]any{"text": s})
		require.Equal(t, 201, st, raw)
		h.clock.Advance(time.Second)
	}
	fail.Store(true)
	st, _, raw := h.do("POST", "/v1/memory/modeled/summarize", ed, map[string]any{})
	require.Equal(t, http.StatusServiceUnavailable, st, raw)
	require.Contains(t, raw, "Unavailable")
	fail.Store(false)
	st, body, raw := h.do("POST", "/v1/memory/modeled/summarize", ed, map[string]any{})
	require.Equal(t, 200, st, raw)
	require.Equal(t, "model", body["method"])
	require.Equal(t, "mark", body["policy"])
	require.EqualValues(t, 3, body["summarized"])
	sum := body["summary"].(map[string]any)
	require.Equal(t, "Summary of III items; mail [REDACTED:EMAIL]", sum["text"], "the model's answer is redacted too")
	require.Equal(t, "gpt-test", gotModel.Load())
	require.Equal(t, "Bearer "+ed, gotAuth.Load(), "a person's own credential is forwarded by default")
	require.EqualValues(t, 2, calls.Load())
	// Policy mark: the items stay, hidden from queries unless asked.
	_, body, _ = h.do("POST", "/v1/memory/modeled/query", ed, map[string]any{})
	require.Len(t, itemsOf(body), 1)
	_, body, _ = h.do("POST", "/v1/memory/modeled/query", ed, map[string]any{"includeSummarized": true})
	require.Len(t, itemsOf(body), 4)
	for _, it := range itemsOf(body)[1:] {
		require.Equal(t, sum["id"], it["summarizedInto"])
	}
}
