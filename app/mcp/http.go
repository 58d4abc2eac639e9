package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Handler returns the MCP gateway's HTTP handler (port 8082). It is plain
// net/http rather than Fiber because the per-agent endpoint streams
// server-sent events through the SDK's http.Handler.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("POST /v1/mcp/discover", s.handleDiscover)
	mux.HandleFunc("POST /v1/mcp/call", s.handleCall)
	mux.HandleFunc("POST /v1/mcp/{server}/call", s.handleCall)
	mux.HandleFunc("POST /v1/mcp/{server}/pin", s.handlePin)
	mux.HandleFunc("POST /v1/mcp/{server}/quarantine", s.handleQuarantine)
	mux.HandleFunc("POST /v1/mcp/{server}/unquarantine", s.handleUnquarantine)
	mux.Handle("/mcp", s.agents.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apierr.New(apierr.CodeNotFound, "no MCP gateway endpoint %s %s", r.Method, r.URL.Path))
	})
	return s.recoverPanics(mux)
}

// Serve serves the MCP gateway on ln until ctx ends, then lets requests in
// flight finish (10 s at most).
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	t := s.cfg.Timeouts.WithDefaults()
	srv := &http.Server{
		Handler: s.Handler(),
		// No ReadTimeout: it would end the event streams of /mcp. The
		// bodies of the JSON endpoints get Timeouts.Read in readBody.
		ReadHeaderTimeout: t.ReadHeader,
		IdleTimeout:       t.Idle,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if s.cfg.DiscoverEvery > 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.discoverPeriodically(ctx) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.agents.close()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shut down MCP gateway: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// recoverPanics gives every request an X-Request-Id (the client's, when it
// sends a short one) and turns a panic into a 500 with the error logged
// (listener.RecoverHTTPWith).
func (s *Service) recoverPanics(next http.Handler) http.Handler {
	headers := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
	return listener.RecoverHTTPWith(headers, s.log, func(w http.ResponseWriter, _ *http.Request, requestID string) {
		writeError(w, listener.InternalError(requestID))
	})
}

// requestID is the request's id (listener.RecoverHTTPWith gave it one).
func requestID(ctx context.Context) string { return listener.RequestIDFromContext(ctx) }

// authenticate verifies the request's credential.
func (s *Service) authenticate(r *http.Request) (auth.Principal, error) {
	p, err := s.cfg.Authn.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			return p, apierr.New(apierr.CodeUnauthenticated,
				"a valid credential is required: send Authorization: Bearer <workload token for audience warden:mcp-gateway, or an API key>")
		}
		return p, fmt.Errorf("mcp: authenticate: %w", err)
	}
	return p, nil
}

// namespace is the credential's namespace, else ?namespace=, else default.
func namespace(p auth.Principal, r *http.Request) string {
	if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		return p.Namespace
	}
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return "default"
}

func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.Timeouts.WithDefaults().Read)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", s.cfg.MaxBodyBytes)
		}
		return nil, apierr.New(apierr.CodeInvalidRequest, "read the request body: %s", err)
	}
	return b, nil
}

// fail writes err as the error body; internal errors are logged, not shown.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := apierr.As(err)
	if !ok {
		s.log.ErrorContext(r.Context(), "MCP gateway internal error", "err", err, "method", r.Method, "path", r.URL.Path, "requestId", requestID(r.Context()))
		e = listener.InternalError(requestID(r.Context()))
	}
	if e.Code == apierr.CodeUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden-mcp-gateway"`)
	}
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *apierr.Error) {
	writeJSON(w, e.Status(), apierr.Body{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := resource.MarshalValue(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"Internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// list is the body of an answer with several MCPServers.
func list(items []*resource.Object) map[string]any {
	if items == nil {
		items = []*resource.Object{}
	}
	return map[string]any{"apiVersion": resource.GroupVersion, "kind": resource.KindMCPServer + "List", "items": items}
}

// handleDiscover is POST /v1/mcp/discover: body {"server": "…"} (optional;
// every server of the namespace without it).
func (s *Service) handleDiscover(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Server string `json:"server"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			s.fail(w, r, apierr.New(apierr.CodeInvalidRequest, `the body is {"server": "<name>"} or empty: %s`, err))
			return
		}
	}
	if req.Server == "" {
		req.Server = r.URL.Query().Get("server")
	}
	ns := namespace(p, r)
	ctx := authz.EnsureTrail(r.Context())
	items, err := s.Discover(ctx, p, ns, req.Server)
	target := "MCPServer/*"
	if req.Server != "" {
		target = "MCPServer/" + req.Server
	}
	s.audit(ctx, p, "mcpservers/discover", ns, target, "", err)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list(items))
}

// audit records an operator's call.
func (s *Service) audit(ctx context.Context, p auth.Principal, verb, ns, res, reason string, callErr error) {
	rec := audit.Record{Time: s.now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: verb, Namespace: ns,
		Resource: res, Outcome: audit.OutcomeAllowed, Policy: authz.EffectivePolicy(ctx, p), Reason: reason}
	if callErr != nil {
		rec.Outcome = audit.OutcomeFailed
		if e, ok := apierr.As(callErr); ok {
			rec.Reason = e.Code + ": " + e.Message
			if e.Code == apierr.CodeForbidden {
				rec.Outcome = audit.OutcomeDenied
			}
		}
	}
	if p.Tenant == "" {
		return
	}
	err := s.st.Update(context.WithoutCancel(ctx), p.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	})
	if err != nil {
		s.log.ErrorContext(ctx, "audit MCP gateway call", "verb", verb, "err", err)
	}
}

// handleCall is POST /v1/mcp/{server}/call and POST /v1/mcp/call: a
// JSON-RPC tools/call, governed by the tool gateway's nine steps.
func (s *Service) handleCall(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		e, _ := apierr.As(err)
		if e == nil {
			e = apierr.New(apierr.CodeInternal, "internal error")
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden-mcp-gateway"`)
		writeRPC(w, e.Status(), rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wardenRPCError(e)})
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		e, _ := apierr.As(err)
		writeRPC(w, e.Status(), rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wardenRPCError(e)})
		return
	}
	tc, rerr := ParseToolCall(body)
	if rerr != nil {
		id := json.RawMessage("null")
		if tc != nil {
			id = tc.ID
		}
		writeRPC(w, http.StatusBadRequest, rpcResponse{JSONRPC: "2.0", ID: id, Error: rerr})
		return
	}
	server, tool := r.PathValue("server"), tc.Name
	if server == "" {
		server = tc.Server
	}
	if server == "" {
		var ok bool
		if server, tool, ok = SplitToolName(tc.Name); !ok {
			writeRPC(w, http.StatusBadRequest, rpcResponse{JSONRPC: "2.0", ID: tc.ID, Error: &RPCError{Code: rpcInvalidParams,
				Message: `POST /v1/mcp/call names the server in the tool's name: "<server>.<tool>"`}})
			return
		}
	}
	res := s.call(r.Context(), p, server, tool, tc.Arguments, r.URL.Query().Get("wait"), r.Header.Get(gateway.HeaderIdempotencyKey))
	if res.call != "" {
		w.Header().Set(gateway.HeaderToolCall, res.call)
	}
	if res.replayed {
		w.Header().Set(gateway.HeaderReplayed, "true")
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: tc.ID}
	if res.err != nil {
		resp.Error = wardenRPCError(res.err)
		if s := res.err.Details["retryAfterSeconds"]; s != nil {
			w.Header().Set("Retry-After", fmt.Sprint(s))
		}
		writeRPC(w, res.err.Status(), resp)
		return
	}
	resp.Result = res.result
	writeRPC(w, res.status, resp)
}

func writeRPC(w http.ResponseWriter, status int, resp rpcResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
