package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/scan"
	"github.com/warden-dev/warden/app/store"
)

// Scopes of a Memory (spec.scope).
const (
	ScopeNamespace    = "namespace"
	ScopeAgent        = "agent"
	ScopeConversation = "conversation"
)

// Summary policies (spec.summarize.policy).
const (
	PolicyMark   = "mark"
	PolicyDelete = "delete"
)

// RouterToken returns the Authorization header value a summary pass sends
// to the model router for p, whose own request carried authorization; ""
// sends none.
type RouterToken func(ctx context.Context, p auth.Principal, authorization string) (string, error)

// Config configures a Service.
type Config struct {
	// Store holds Memory resources, manifests and items.
	Store store.Store
	// Authn verifies credentials (workload tokens of audience
	// warden:memory, API keys); required by App.
	Authn *auth.Authenticator
	// Authz decides every call.
	Authz *authz.Authorizer
	// Bus receives MemoryRead and MemoryWritten after they are committed;
	// nil means none.
	Bus *events.Bus
	// ModelRouterURL is the model router's base URL, used by summary
	// passes of Memories that name a model.
	ModelRouterURL string
	// RouterToken gives the credential for the router; nil forwards the
	// caller's own Authorization header.
	RouterToken RouterToken
	// HTTPClient calls the router; nil means one with a 2-minute timeout.
	HTTPClient *http.Client
	// Timeouts bound the listener's reads.
	Timeouts listener.Timeouts
	// MaxBodyBytes bounds a request body; zero means 256 KiB.
	MaxBodyBytes int
	// NewID names items; nil means random ids "mi-<24 hex>".
	NewID func() string
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// WithDefaults returns c with its empty fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 256 << 10
	}
	if c.NewID == nil {
		c.NewID = randomID
	}
	if c.RouterToken == nil {
		c.RouterToken = func(_ context.Context, _ auth.Principal, authorization string) (string, error) {
			return authorization, nil
		}
	}
	return c
}

// Validate reports a missing dependency by field name.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("memory: Config.Store is required")
	case c.Authz == nil:
		return errors.New("memory: Config.Authz is required")
	}
	return nil
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "mi-" + hex.EncodeToString(b)
}

// Service is the memory service. Build it with New.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Item is an item as the API answers it.
type Item struct {
	ID        string         `json:"id"`
	Namespace string         `json:"namespace"`
	Memory    string         `json:"memory"`
	Text      string         `json:"text"`
	Metadata  map[string]any `json:"metadata"`
	Scope     Scope          `json:"scope,omitzero"`
	// Summary marks an item a summary pass wrote.
	Summary bool `json:"summary,omitempty"`
	// SummarizedInto names the summary an item was compacted into.
	SummarizedInto string  `json:"summarizedInto,omitempty"`
	CreatedAt      string  `json:"createdAt"`
	ExpiresAt      string  `json:"expiresAt,omitempty"`
	Score          float64 `json:"score,omitempty"`
	// Redactions is how many findings redaction replaced (writes only).
	Redactions int `json:"redactions,omitempty"`
}

func itemOf(it store.MemoryItem) Item {
	out := Item{ID: it.ID, Namespace: it.Namespace, Memory: it.Memory, Text: it.Text, Metadata: it.Metadata,
		Scope: Scope{Agent: it.Agent, Conversation: it.Conversation}, Summary: it.Summary, SummarizedInto: it.SummarizedInto,
		CreatedAt: it.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	if it.ExpiresAt != nil {
		out.ExpiresAt = it.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// QueryResult is the answer of a query.
type QueryResult struct {
	Items []Item `json:"items"`
	Count int    `json:"count"`
}

// SummarizeResult is the answer of a summary pass.
type SummarizeResult struct {
	// Summary is the summary item; nil when there was nothing to compact.
	Summary *Item `json:"summary"`
	// Summarized is how many items were compacted.
	Summarized int `json:"summarized"`
	// Method is "model" or "extractive".
	Method string `json:"method,omitempty"`
	// Policy is what happened to the compacted items: mark or delete.
	Policy string `json:"policy"`
}

// memSpec is a Memory's spec with its defaults applied.
type memSpec struct {
	ttl        time.Duration
	maxItems   int
	scope      string
	redact     bool
	model      string
	keepRecent int
	policy     string
}

func specOf(obj *resource.Object) (memSpec, error) {
	sp, err := resource.DecodeSpec[resource.MemorySpec](obj)
	if err != nil {
		return memSpec{}, fmt.Errorf("memory: decode Memory %s: %w", obj.Metadata.Name, err)
	}
	m := memSpec{maxItems: int(resource.DefaultMemoryMaxItems), scope: ScopeAgent, redact: true,
		keepRecent: DefaultKeepRecent, policy: PolicyMark}
	if sp.TTL != "" {
		if m.ttl, err = time.ParseDuration(sp.TTL); err != nil {
			return m, fmt.Errorf("memory: Memory %s: spec.ttl: %w", obj.Metadata.Name, err)
		}
	}
	if sp.MaxItems > 0 {
		m.maxItems = int(min(sp.MaxItems, store.MaxMemoryQueryLimit))
	}
	if sp.Scope != "" {
		m.scope = sp.Scope
	}
	if sp.RedactPII != nil {
		m.redact = *sp.RedactPII
	}
	if su := sp.Summarize; su != nil {
		m.model = su.Model
		if su.KeepRecent != nil {
			m.keepRecent = int(*su.KeepRecent)
		}
		if su.Policy != "" {
			m.policy = su.Policy
		}
	}
	return m, nil
}

// target is a resolved request: the caller, the Memory and its spec.
type target struct {
	p         auth.Principal
	namespace string
	name      string
	spec      memSpec
}

// Objects and verbs of the memory service's authorization.
func forbidden(p auth.Principal, what, ns string) error {
	return apierr.New(apierr.CodeForbidden, "%s may not %s memory items in namespace %q", p.Subject, what, ns)
}

// open authorizes verb on object for p in ns, checks that a workload's
// compiled manifest names the memory, and reads the Memory.
func (s *Service) open(ctx context.Context, p auth.Principal, ns, name, verb, object, what string) (*target, error) {
	if err := s.cfg.Authz.Authorize(ctx, p, verb, ns, object); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			return nil, forbidden(p, what, ns)
		}
		return nil, err
	}
	t := &target{p: p, namespace: ns, name: name}
	err := s.cfg.Store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		if p.Agent != "" {
			if err := manifestNames(ctx, r, p, ns, name); err != nil {
				return err
			}
		}
		obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindMemory, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(apierr.CodeNotFound, "memory %q does not exist in namespace %q", name, ns)
		}
		if err != nil {
			return fmt.Errorf("memory: read Memory %s/%s: %w", ns, name, err)
		}
		t.spec, err = specOf(obj)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// manifestNames checks that the newest compiled manifest of p's agent
// names memory ns/name (spec.memories.working).
func manifestNames(ctx context.Context, r store.Reader, p auth.Principal, ns, name string) error {
	refuse := func(format string, args ...any) error {
		return apierr.New(apierr.CodeForbidden, format, args...)
	}
	if ns != p.Namespace {
		return refuse("agent %q works in namespace %q, not %q", p.Agent, p.Namespace, ns)
	}
	mname, spec, err := store.AgentManifest(ctx, r, ns, p.Agent)
	var missing *store.ManifestNotFoundError
	if errors.As(err, &missing) {
		return refuse("%s", missing.Reason)
	}
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if w := spec.Memories.Working; w == nil || w.Name != name || w.Namespace != ns {
		return refuse("agent %q does not name memory %q in its compiled manifest %s", p.Agent, name, mname)
	}
	return nil
}

// scopeOf resolves the agent and conversation of a write or a summary
// pass (forWrite) or the filter of a query.
func (t *target) scopeOf(req Scope, forWrite bool) (Scope, error) {
	out := req
	if t.p.Agent != "" {
		if req.Agent != "" && req.Agent != t.p.Agent {
			return out, apierr.New(apierr.CodeForbidden, "agent %q may not use the items of agent %q", t.p.Agent, req.Agent)
		}
		out.Agent = t.p.Agent
	}
	switch t.spec.scope {
	case ScopeNamespace:
		if !forWrite {
			// Everyone in the namespace shares the items.
			return Scope{Agent: req.Agent, Conversation: req.Conversation}, nil
		}
	case ScopeAgent:
		if forWrite && out.Agent == "" {
			return out, invalid("memory %q is scoped per agent: name scope.agent", t.name)
		}
	case ScopeConversation:
		if (forWrite || t.p.Agent != "") && (out.Agent == "" || out.Conversation == "") {
			return out, invalid("memory %q is scoped per conversation: name scope.conversation (and scope.agent unless a workload calls)", t.name)
		}
	}
	return out, nil
}

// redactItem redacts text and the metadata's strings when the Memory says
// so, and returns how many findings it replaced.
func (t *target) redactItem(text string, meta map[string]any) (string, map[string]any, int) {
	if !t.spec.redact {
		return text, meta, 0
	}
	out, fs := scan.Redact(text)
	n := len(fs)
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			r, f := scan.Redact(x)
			n += len(f)
			return r
		case map[string]any:
			c := make(map[string]any, len(x))
			for k, e := range x {
				c[k] = walk(e)
			}
			return c
		case []any:
			c := make([]any, len(x))
			for i, e := range x {
				c[i] = walk(e)
			}
			return c
		}
		return v
	}
	if meta != nil {
		meta, _ = walk(meta).(map[string]any)
	}
	return out, meta, n
}

// Write stores one item in memory name of namespace ns.
func (s *Service) Write(ctx context.Context, p auth.Principal, ns string, req WriteRequest) (*Item, error) {
	t, err := s.open(ctx, p, ns, req.Memory, authz.VerbCreate, authz.ObjMemoryItems, "write")
	if err != nil {
		return nil, err
	}
	sc, err := t.scopeOf(req.Scope, true)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	text, meta, redactions := t.redactItem(req.Text, req.Metadata)
	it := store.MemoryItem{ID: s.cfg.NewID(), Namespace: ns, Memory: t.name, Agent: sc.Agent, Conversation: sc.Conversation,
		Text: text, Metadata: meta, CreatedAt: now}
	ttl := req.ttl
	if t.spec.ttl > 0 && (ttl == 0 || ttl > t.spec.ttl) {
		ttl = t.spec.ttl
	}
	if ttl > 0 {
		e := now.Add(ttl)
		it.ExpiresAt = &e
	}
	ev := events.Event{Type: events.MemoryWritten, Time: now, Tenant: p.Tenant, Namespace: ns, Subject: "Memory/" + t.name,
		Data: map[string]any{"item": it.ID, "agent": sc.Agent, "conversation": sc.Conversation, "actor": p.Subject,
			"redactions": redactions}}
	var trimmed int
	err = s.cfg.Store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		if it, err = tx.MemoryItemInsert(ctx, it); err != nil {
			return fmt.Errorf("memory: write item: %w", err)
		}
		if trimmed, err = tx.MemoryItemTrim(ctx, store.MemoryTrim{Namespace: ns, Memory: t.name, Now: now, Keep: t.spec.maxItems}); err != nil {
			return fmt.Errorf("memory: trim: %w", err)
		}
		ev.Data["trimmed"] = trimmed
		ev, err = tx.EventInsert(ctx, ev)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.publish(ev)
	out := itemOf(it)
	out.Redactions = redactions
	return &out, nil
}

// Query reads items of a memory.
func (s *Service) Query(ctx context.Context, p auth.Principal, ns string, req QueryRequest) (*QueryResult, error) {
	t, err := s.open(ctx, p, ns, req.Memory, auth.VerbGet, authz.ObjMemoryItems, "read")
	if err != nil {
		return nil, err
	}
	sc, err := t.scopeOf(req.Scope, false)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	q := store.MemoryQuery{Namespace: ns, Memory: t.name, Agent: sc.Agent, Conversation: sc.Conversation, Now: now,
		Metadata: req.Metadata, Since: req.sinceAt(now), IncludeSummarized: req.IncludeSummarized, Limit: req.Limit}
	if req.Text != "" {
		// Ranking needs every candidate: the collection statistics are
		// those of the items the filters select.
		q.Limit = 0
	}
	var items []store.MemoryItem
	err = s.cfg.Store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		items, err = r.MemoryItemQuery(ctx, q)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("memory: query: %w", err)
	}
	res := &QueryResult{Items: []Item{}}
	if req.Text != "" {
		for _, sc := range rank(items, req.Text, req.Limit) {
			it := itemOf(sc.item)
			it.Score = sc.score
			res.Items = append(res.Items, it)
		}
	} else {
		for _, it := range items {
			res.Items = append(res.Items, itemOf(it))
		}
	}
	res.Count = len(res.Items)
	ids := make([]any, len(res.Items))
	for i, it := range res.Items {
		ids[i] = it.ID
	}
	ev := events.Event{Type: events.MemoryRead, Time: now, Tenant: p.Tenant, Namespace: ns, Subject: "Memory/" + t.name,
		Data: map[string]any{"agent": sc.Agent, "conversation": sc.Conversation, "actor": p.Subject, "count": res.Count,
			"items": ids, "ranked": req.Text != ""}}
	if err := s.cfg.Store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		ev, err = tx.EventInsert(ctx, ev)
		return err
	}); err != nil {
		return nil, fmt.Errorf("memory: record MemoryRead: %w", err)
	}
	s.publish(ev)
	return res, nil
}

// Delete deletes one item. A workload deletes only its own items.
func (s *Service) Delete(ctx context.Context, p auth.Principal, ns, name, id string) error {
	t, err := s.open(ctx, p, ns, name, auth.VerbDelete, authz.ObjMemoryItems, "delete")
	if err != nil {
		return err
	}
	err = s.cfg.Store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemoryItemDelete(ctx, store.MemoryItemKey{Namespace: ns, Memory: t.name, ID: id, Agent: p.Agent})
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.New(apierr.CodeNotFound, "memory %q has no item %q", name, id)
	}
	return err
}

// Summarize compacts the items of a memory older than the newest
// keepRecent (and than req.OlderThan) into one summary item. authorization
// is the caller's Authorization header, for the model router.
func (s *Service) Summarize(ctx context.Context, p auth.Principal, ns, name string, req SummarizeRequest, authorization string) (*SummarizeResult, error) {
	t, err := s.open(ctx, p, ns, name, authz.VerbCreate, authz.ObjMemorySummarize, "summarize")
	if err != nil {
		return nil, err
	}
	sc, err := t.scopeOf(req.Scope, true)
	if err != nil {
		return nil, err
	}
	if t.spec.scope == ScopeNamespace {
		// One pass over the whole namespace's items.
		sc = Scope{}
	}
	keep := t.spec.keepRecent
	if req.KeepRecent != nil {
		keep = *req.KeepRecent
	}
	now := s.cfg.Now().UTC()
	q := store.MemoryQuery{Namespace: ns, Memory: t.name, Agent: sc.Agent, Conversation: sc.Conversation, Now: now}
	if req.olderThan > 0 {
		q.Before = now.Add(-req.olderThan)
	}
	var items []store.MemoryItem
	if err := s.cfg.Store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		items, err = r.MemoryItemQuery(ctx, q)
		return err
	}); err != nil {
		return nil, fmt.Errorf("memory: summarize: %w", err)
	}
	res := &SummarizeResult{Policy: t.spec.policy}
	// The newest keep items stay (with olderThan, counted among the items
	// old enough).
	items = items[min(keep, len(items)):]
	// Oldest first, at most MaxSummarizeItems of the oldest.
	for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
		items[i], items[j] = items[j], items[i]
	}
	items = items[:min(len(items), MaxSummarizeItems)]
	if len(items) < 2 {
		return res, nil
	}
	var text string
	if t.spec.model != "" {
		cred, err := s.cfg.RouterToken(ctx, p, authorization)
		if err != nil {
			return nil, fmt.Errorf("memory: credential for the model router: %w", err)
		}
		if text, err = s.modelSummary(ctx, t.spec.model, cred, items); err != nil {
			return nil, err
		}
		res.Method = MethodModel
	} else {
		text = extractive(items)
		res.Method = MethodExtractive
	}
	text, _, redactions := t.redactItem(text, nil)
	newest := items[len(items)-1]
	ids := make([]string, len(items))
	var expires *time.Time
	forever := false
	for i, it := range items {
		ids[i] = it.ID
		switch {
		case it.ExpiresAt == nil:
			forever = true
		case expires == nil || it.ExpiresAt.After(*expires):
			e := *it.ExpiresAt
			expires = &e
		}
	}
	if forever {
		expires = nil
	}
	meta := map[string]any{"method": res.Method, "summarized": len(items),
		"from": items[0].CreatedAt.UTC().Format(time.RFC3339Nano), "to": newest.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if res.Method == MethodModel {
		meta["model"] = t.spec.model
	}
	// The summary stands where the newest compacted item stood, so the
	// memory's order by recency is kept.
	sum := store.MemoryItem{ID: s.cfg.NewID(), Namespace: ns, Memory: t.name, Agent: sc.Agent, Conversation: sc.Conversation,
		Text: text, Metadata: meta, Summary: true, CreatedAt: newest.CreatedAt.Add(time.Microsecond), ExpiresAt: expires}
	ev := events.Event{Type: events.MemoryWritten, Time: now, Tenant: p.Tenant, Namespace: ns, Subject: "Memory/" + t.name,
		Data: map[string]any{"item": sum.ID, "summary": true, "summarized": len(items), "policy": t.spec.policy,
			"method": res.Method, "agent": sc.Agent, "conversation": sc.Conversation, "actor": p.Subject, "redactions": redactions}}
	err = s.cfg.Store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		if sum, err = tx.MemoryItemInsert(ctx, sum); err != nil {
			return fmt.Errorf("memory: write summary: %w", err)
		}
		n, err := tx.MemoryItemCompact(ctx, store.MemoryCompact{Namespace: ns, Memory: t.name, IDs: ids, SummaryID: sum.ID,
			Delete: t.spec.policy == PolicyDelete})
		if err != nil {
			return fmt.Errorf("memory: compact: %w", err)
		}
		if n != len(ids) {
			// Another pass or a delete got there first.
			return apierr.New(apierr.CodeConflict, "the items of memory %q changed during the summary pass; run it again", t.name)
		}
		ev, err = tx.EventInsert(ctx, ev)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.publish(ev)
	out := itemOf(sum)
	out.Redactions = redactions
	res.Summary, res.Summarized = &out, len(items)
	return res, nil
}

func (s *Service) publish(ev events.Event) {
	if s.cfg.Bus != nil {
		s.cfg.Bus.Publish(ev)
	}
}
