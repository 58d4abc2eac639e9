package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/auth"
)

// Headers of the streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
	// newProtocol is the first revision of the sessionless protocol,
	// which the SDK's stateful handler refuses: such requests stay with
	// it.
	newProtocol = "2026-07-28"
)

// serveCall answers a tools/call on an established session of /mcp
// itself, straight into the tool gateway: the SDK's generic path decodes
// a request several times over, hands it through its connection's
// goroutines and answers it as a server-sent event, which cost more than
// the governed call. It takes only the plain case and reports false for
// anything else, having left the request as it was (the body is put back),
// so that the SDK answers it: other methods, batches, a session it does not
// know as this agent's and initialized, a request whose _meta asks for
// progress or names a protocol revision, a tool the agent's list does not
// have, a header the SDK would refuse. The answer is application/json,
// which every client accepts (it must send Accept with both types).
//
// The SDK restarts a session's idle timer on the requests it handles, so
// a session is served here only while the SDK saw one of its requests in
// the last half of sessionTimeout; then one request goes through the SDK.
func (a *agentServers) serveCall(w http.ResponseWriter, r *http.Request, p auth.Principal, sid string) bool {
	if r.Method != http.MethodPost || r.Body == nil || !plainPost(r, a.versions) {
		return false
	}
	a.mu.Lock()
	as := a.servers[identity(p)]
	a.mu.Unlock()
	if as == nil || !as.recentlySeen(sid, time.Now()) || !as.hasSession(sid) {
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.s.cfg.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mb.Limit), http.StatusRequestEntityTooLarge)
			return true
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return true
	}
	_ = r.Body.Close()
	tc, rerr := ParseToolCall(body)
	listed := as.listed.Load()
	if rerr != nil || tc.Server != "" || tc.Meta != nil || listed == nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return false
	}
	if _, ok := (*listed)[tc.Name]; !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return false
	}
	// As in the SDK, the call outlives a client that goes away: it is
	// recorded and finishes.
	res := a.callTool(context.WithoutCancel(r.Context()), p, tc.Name, tc.Arguments, nil)
	resp := rpcResponse{JSONRPC: "2.0", ID: tc.ID, Result: res}
	if !textOnly(res) {
		// Other content goes through the SDK's type, which checks it,
		// as the SDK's own answer would.
		resp.Result = toSDKResult(res)
	}
	writeRPC(w, http.StatusOK, resp)
	return true
}

// plainPost reports whether the SDK would take r's headers: JSON that
// accepts both answers, no resumption, a protocol revision of a stateful
// session, a Host that is not a rebinding of loopback.
func plainPost(r *http.Request, versions []string) bool {
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return false
	}
	accept := strings.ToLower(strings.Join(r.Header.Values("Accept"), ","))
	if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
		return false
	}
	if len(r.Header.Values(headerLastEventID)) > 0 {
		return false
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" && (v >= newProtocol || !slices.Contains(versions, v)) {
		return false
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host) {
		return false
	}
	return true
}

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// textOnly reports whether every content item of a result is text.
func textOnly(res map[string]any) bool {
	content, _ := res["content"].([]any)
	for _, c := range content {
		item, _ := c.(map[string]any)
		if item == nil || item["type"] != "text" {
			return false
		}
	}
	return true
}

// hasSession reports whether sid is an initialized session of the agent's
// server (one the SDK has not closed).
func (as *agentServer) hasSession(sid string) bool {
	for ss := range as.srv.Sessions() {
		if ss.ID() == sid {
			return ss.InitializeParams() != nil
		}
	}
	return false
}

// recentlySeen reports whether the SDK handled a request of session sid
// in the last half of sessionTimeout.
func (as *agentServer) recentlySeen(sid string, now time.Time) bool {
	as.seenMu.Lock()
	defer as.seenMu.Unlock()
	t, ok := as.seen[sid]
	return ok && now.Sub(t) < sessionTimeout/2
}

// sawSession notes that the SDK handled a request of session sid of the
// agent p, which restarted the session's idle timer.
func (a *agentServers) sawSession(p auth.Principal, sid string) {
	a.mu.Lock()
	as := a.servers[identity(p)]
	a.mu.Unlock()
	if as == nil {
		return
	}
	now := time.Now()
	as.seenMu.Lock()
	defer as.seenMu.Unlock()
	if len(as.seen) >= 64 {
		// Forget the sessions the SDK closed.
		live := map[string]bool{}
		for ss := range as.srv.Sessions() {
			live[ss.ID()] = true
		}
		for id := range as.seen {
			if !live[id] {
				delete(as.seen, id)
			}
		}
	}
	as.seen[sid] = now
}
