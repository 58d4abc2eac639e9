package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/gateway"
)

// Settings of the per-agent endpoint.
const (
	// ApprovalWait is how long a tools/call on /mcp waits for an approval
	// before it answers a result that says the call awaits approval.
	ApprovalWait = 2 * time.Minute
	// progressEvery is how often a waiting call sends a progress
	// notification (when the client gave a progress token).
	progressEvery = 5 * time.Second
	// sessionTimeout ends a session of /mcp that sent no request for
	// this long.
	sessionTimeout = 30 * time.Minute
	principalKey   = "warden.principal"
)

// agentServers is the per-agent MCP endpoint /mcp: one MCP server per
// agent identity whose tools are exactly those of the agent's compiled
// manifest (its REST, OS and MCP tools and the discovered tools of the MCP
// servers it names), each call governed by the tool gateway. When the
// tenant's configuration changes the tool set is compared again and the
// SDK sends notifications/tools/list_changed to the agent's sessions.
type agentServers struct {
	s *Service
	h http.Handler

	mu      sync.Mutex
	servers map[string]*agentServer
	// verified remembers tokens already verified, so that the requests of
	// a session do not each check a signature.
	verified tokenCache
	// versions are the protocol revisions the SDK negotiates.
	versions []string
}

// agentServer is one agent's MCP server and the tools it lists.
type agentServer struct {
	p auth.Principal
	// born is when the server was built: a new one may be about to get
	// its first session, so it is not dropped as idle.
	born time.Time
	srv  *sdk.Server
	// mu orders the syncs of the tool list.
	mu     sync.Mutex
	synced bool
	// listed holds the names of the listed tools (name → JSON of the
	// definition); it is replaced, never changed, so that a call reads it
	// without the lock.
	listed atomic.Pointer[map[string]string]
	// seen is when the SDK last handled a request of each session (the
	// session's idle timer restarts then); see serveCall.
	seenMu sync.Mutex
	seen   map[string]time.Time
}

func newAgentServers(s *Service) *agentServers {
	a := &agentServers{s: s, servers: map[string]*agentServer{}, verified: tokenCache{m: map[string]cachedToken{}},
		versions: sdk.SupportedProtocolVersions()}
	stream := sdk.NewStreamableHTTPHandler(a.serverFor, &sdk.StreamableHTTPOptions{
		Logger: s.log, SessionTimeout: sessionTimeout, MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
	})
	withToken := sdkauth.RequireBearerToken(a.verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	// A refused credential gets the gateway's error body and challenge;
	// the SDK's middleware then finds the verified token in the cache.
	a.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			a.refuse(w, "send Authorization: Bearer <the agent's workload token for audience warden:mcp-gateway>")
			return
		}
		ti, err := a.verify(r.Context(), token, r)
		if err != nil {
			a.refuse(w, strings.TrimPrefix(err.Error(), sdkauth.ErrInvalidToken.Error()+": "))
			return
		}
		p, _ := ti.Extra[principalKey].(auth.Principal)
		sid := r.Header.Get(headerSessionID)
		if sid != "" && a.serveCall(w, r, p, sid) {
			return
		}
		withToken.ServeHTTP(w, r)
		if sid != "" {
			a.sawSession(p, sid)
		}
	})
	return a
}

// refuse answers 401 with the error body and a Bearer challenge.
func (a *agentServers) refuse(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="warden-mcp-gateway"`)
	writeError(w, apierr.New(apierr.CodeUnauthenticated, "a valid agent credential is required: %s", why))
}

func (a *agentServers) handler() http.Handler { return a.h }

// verify authenticates the agent's workload token. The session is bound to
// the agent identity (UserID): the SDK refuses a request of another
// identity on it.
func (a *agentServers) verify(ctx context.Context, token string, _ *http.Request) (*sdkauth.TokenInfo, error) {
	if ti := a.verified.get(token, a.s.now()); ti != nil {
		return ti, nil
	}
	p, err := a.s.cfg.Authn.Authenticate(ctx, "Bearer "+token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sdkauth.ErrInvalidToken, err)
	}
	if p.Agent == "" || p.Namespace == "" || p.Namespace == auth.AllNamespaces || p.Environment == "" {
		return nil, fmt.Errorf("%w: /mcp serves agents: send the agent's workload token for audience warden:mcp-gateway", sdkauth.ErrInvalidToken)
	}
	ti := &sdkauth.TokenInfo{UserID: identity(p), Extra: map[string]any{principalKey: p}}
	a.verified.put(token, ti, a.s.now())
	return ti, nil
}

func identity(p auth.Principal) string {
	return p.Tenant + "\x00" + p.Namespace + "\x00" + p.Agent + "\x00" + p.Environment
}

// serverFor returns the MCP server of the request's agent.
func (a *agentServers) serverFor(r *http.Request) *sdk.Server {
	ti := sdkauth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return nil
	}
	p, _ := ti.Extra[principalKey].(auth.Principal)
	key := identity(p)
	a.mu.Lock()
	as, ok := a.servers[key]
	if !ok {
		as = &agentServer{p: p, born: time.Now(), seen: map[string]time.Time{},
			srv: sdk.NewServer(&sdk.Implementation{Name: "warden", Title: "Warden MCP gateway", Version: Version}, &sdk.ServerOptions{
				Instructions: "Tools of agent " + p.Agent + ", governed by Warden: calls may be denied by policy or wait for human approval.",
				Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
			})}
		a.servers[key] = as
	}
	a.mu.Unlock()
	// A new server lists the agent's tools once; later changes reach it
	// through invalidate.
	if err := a.syncOnce(r.Context(), as); err != nil {
		a.s.log.WarnContext(r.Context(), "list the tools of an agent", "agent", p.Agent, "namespace", p.Namespace, "err", err)
	}
	return as.srv
}

// syncOnce syncs a server that has never been synced successfully.
func (a *agentServers) syncOnce(ctx context.Context, as *agentServer) error {
	as.mu.Lock()
	done := as.synced
	as.mu.Unlock()
	if done {
		return nil
	}
	return a.sync(ctx, as)
}

// sync makes the agent's server list exactly the agent's tools; the SDK
// notifies the sessions of any change. Syncs of one server take turns, so
// the tool list of the newest configuration is applied last.
func (a *agentServers) sync(ctx context.Context, as *agentServer) error {
	if a.s.gw == nil {
		return errors.New("the tool gateway is not running")
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	tools, err := a.s.gw.AgentTools(ctx, as.p)
	if err != nil {
		return err
	}
	listed := map[string]string{}
	if old := as.listed.Load(); old != nil {
		listed = maps.Clone(*old)
	}
	want := make(map[string]bool, len(tools))
	for _, t := range tools {
		want[t.Name] = true
		schema := t.InputSchema
		if schema == nil || schema["type"] != "object" {
			schema = map[string]any{"type": "object"}
		}
		def := &sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
		if len(t.Annotations) > 0 {
			var ann sdk.ToolAnnotations
			if b, err := json.Marshal(t.Annotations); err == nil && json.Unmarshal(b, &ann) == nil {
				def.Annotations = &ann
			}
		}
		b, _ := json.Marshal(def)
		if listed[t.Name] == string(b) {
			continue
		}
		listed[t.Name] = string(b)
		as.srv.AddTool(def, a.toolHandler(t.Name))
	}
	var gone []string
	for name := range listed {
		if !want[name] {
			gone = append(gone, name)
			delete(listed, name)
		}
	}
	if len(gone) > 0 {
		as.srv.RemoveTools(gone...)
	}
	as.listed.Store(&listed)
	as.synced = true
	return nil
}

// invalidate compares the tool sets of a tenant's agents again.
func (a *agentServers) invalidate(tenant string) {
	a.mu.Lock()
	var mine []*agentServer
	for key, as := range a.servers {
		if as.p.Tenant != tenant {
			continue
		}
		// A server without sessions is dropped rather than kept current;
		// the agent's next session builds it again.
		idle := time.Since(as.born) > time.Minute
		for range as.srv.Sessions() {
			idle = false
			break
		}
		if idle {
			delete(a.servers, key)
			continue
		}
		mine = append(mine, as)
	}
	a.mu.Unlock()
	if len(mine) == 0 || a.s.gw == nil {
		return
	}
	// The gateway drops its snapshot on the same commit, but its listener
	// may run after this one: drop it first so the comparison reads the
	// new configuration.
	a.s.gw.Invalidate(tenant)
	a.s.wg.Add(1)
	go func() {
		defer a.s.wg.Done()
		for _, as := range mine {
			if err := a.sync(a.s.base, as); err != nil && a.s.base.Err() == nil {
				a.s.log.Warn("update the tools of an agent", "agent", as.p.Agent, "err", err)
			}
		}
	}()
}

// close ends every session.
func (a *agentServers) close() {
	a.mu.Lock()
	servers := a.servers
	a.servers = map[string]*agentServer{}
	a.mu.Unlock()
	for _, as := range servers {
		for ss := range as.srv.Sessions() {
			_ = ss.Close()
		}
	}
}

// toolHandler runs tools/call of one tool through the gateway (for the
// requests serveCall leaves to the SDK: those with a progress token, for
// one).
func (a *agentServers) toolHandler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var p auth.Principal
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			p, _ = req.Extra.TokenInfo.Extra[principalKey].(auth.Principal)
		}
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return toSDKResult(errorResult(apierr.New(apierr.CodeInvalidRequest, "arguments must be an object: %s", err))), nil
			}
		}
		var notify func(ctx context.Context, n int, msg string)
		if token := req.Params.GetProgressToken(); token != nil {
			notify = func(ctx context.Context, n int, msg string) {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
			}
		}
		return toSDKResult(a.callTool(ctx, p, name, args, notify)), nil
	}
}

// callTool runs tools/call of one tool through the gateway and returns
// the CallToolResult as a generic object. A call that waits for approval
// calls notify while it waits (when the client asked for progress), then
// answers the result, or after ApprovalWait a result saying that the call
// still awaits approval.
func (a *agentServers) callTool(ctx context.Context, p auth.Principal, name string, args map[string]any,
	notify func(ctx context.Context, n int, msg string)) map[string]any {
	cr := a.s.govern(ctx, p, gateway.CallRequest{Tool: name, Input: args})
	if cr.err != nil {
		return errorResult(cr.err)
	}
	if cr.phase == gateway.PhaseAwaitingApproval {
		cr = a.awaitApproval(ctx, p, cr, notify)
	}
	return cr.result
}

// awaitApproval waits for the approver, telling the client while it waits.
func (a *agentServers) awaitApproval(ctx context.Context, p auth.Principal, cr callResult, notify func(ctx context.Context, n int, msg string)) callResult {
	deadline := time.Now().Add(ApprovalWait)
	for n := 1; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		if notify != nil {
			notify(ctx, n, fmt.Sprintf("tool call %s awaits human approval (Approval %s)", cr.call, gateway.ApprovalName(cr.call)))
		}
		obj, err := a.s.gw.WaitCall(ctx, p, cr.call, min(progressEvery, time.Until(deadline)))
		if err != nil {
			return cr
		}
		phase, _ := obj.Status["phase"].(string)
		if !gateway.Finished(phase) {
			continue
		}
		out, _ := obj.Status["output"].(map[string]any)
		if phase == gateway.PhaseSucceeded {
			return callResult{result: shapeResult(out, nil, cr.call), phase: phase, call: cr.call}
		}
		res := shapeResult(out, nil, cr.call)
		res["isError"] = true
		return callResult{result: res, phase: phase, call: cr.call}
	}
	return cr
}

// errorResult is a refusal as a tool error result the model can read.
func errorResult(e *apierr.Error) map[string]any {
	return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": e.Code + ": " + e.Message}},
		"structuredContent": map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": e.Details}}}
}

// toSDKResult decodes a generic CallToolResult.
func toSDKResult(m map[string]any) *sdk.CallToolResult {
	b, err := json.Marshal(m)
	var res sdk.CallToolResult
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: apierr.CodeInternal + ": the result cannot be encoded"}}}
	}
	return &res
}

// tokenCache remembers verified workload tokens until they expire, or for
// at most tokenCacheTTL.
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedToken
}

type cachedToken struct {
	ti    *sdkauth.TokenInfo
	until time.Time
}

const (
	tokenCacheTTL = time.Minute
	tokenCacheMax = 4096
)

func (c *tokenCache) get(token string, now time.Time) *sdkauth.TokenInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[token]
	if !ok {
		return nil
	}
	if !now.Before(e.until) {
		delete(c.m, token)
		return nil
	}
	return e.ti
}

func (c *tokenCache) put(token string, ti *sdkauth.TokenInfo, now time.Time) {
	// Only workload tokens (JWTs, which expire) are remembered: an API key
	// can be revoked at any time.
	exp, ok := jwtExpiry(token)
	if !ok {
		return
	}
	until := now.Add(tokenCacheTTL)
	if exp.Before(until) {
		until = exp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= tokenCacheMax {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= tokenCacheMax {
			clear(c.m)
		}
	}
	c.m[token] = cachedToken{ti: ti, until: until}
}

// jwtExpiry reads the exp claim of a JWT whose signature was verified.
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp == 0 {
		return time.Time{}, false
	}
	return time.Unix(claims.Exp, 0), true
}
