package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/store"
)

// Headers of the router.
const (
	// HeaderExecution names the execution a call belongs to.
	HeaderExecution = "Warden-Execution"
	// HeaderNamespace names the namespace for a credential valid in every
	// namespace.
	HeaderNamespace = "Warden-Namespace"
	// HeaderDecision names the routing decision of an answer.
	HeaderDecision = "Warden-Route-Decision"
	// HeaderModel names the Model that answered.
	HeaderModel = "Warden-Model"
)

// Handler returns the router's HTTP handler (port 8083).
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.Handle("POST /v1/model/respond", r.authed(r.handleRespond(false)))
	mux.Handle("POST /v1/model/stream", r.authed(r.handleRespond(true)))
	mux.Handle("POST /v1/chat/completions", r.authed(r.handleRespond(false)))
	mux.Handle("POST /v1/embeddings", r.authed(http.HandlerFunc(r.handleEmbeddings)))
	mux.Handle("POST /v1/messages", r.authed(http.HandlerFunc(r.handleMessages)))
	mux.Handle("GET /v1/models", r.authed(http.HandlerFunc(r.handleModels)))
	mux.Handle("GET /v1/models/capabilities", r.authed(http.HandlerFunc(r.handleCapabilities)))
	mux.Handle("GET /v1/route/{name}/explain", r.authed(http.HandlerFunc(r.handleExplain)))
	mux.HandleFunc("/", func(w http.ResponseWriter, hr *http.Request) {
		writeError(w, apierr.New(apierr.CodeNotFound, "no route %s %s on the model router", hr.Method, hr.URL.Path))
	})
	return r.recoverPanics(mux)
}

// recoverPanics turns a panic into a 500 with the error body naming the
// request id (listener.RecoverHTTPWith).
func (r *Router) recoverPanics(next http.Handler) http.Handler {
	return listener.RecoverHTTPWith(next, r.log, func(w http.ResponseWriter, _ *http.Request, requestID string) {
		writeError(w, listener.InternalError(requestID))
	})
}

type principalKey struct{}

// authed verifies the credential: a workload token of audience
// warden:model-router, an API key or a person's token, as the tool
// gateway does. Anthropic's SDK sends its key as x-api-key.
func (r *Router) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		header := hr.Header.Get("Authorization")
		if header == "" {
			if k := hr.Header.Get("x-api-key"); k != "" {
				header = "Bearer " + k
			}
		}
		p, err := r.cfg.Authn.Authenticate(hr.Context(), header)
		if err != nil {
			if errors.Is(err, auth.ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="warden-model-router"`)
				writeError(w, apierr.New(apierr.CodeUnauthenticated,
					"a valid credential is required: send Authorization: Bearer <workload token for audience warden:model-router, or an API key>"))
				return
			}
			writeError(w, internal(r, hr.Context(), err))
			return
		}
		ctx := auth.WithPrincipal(hr.Context(), p)
		next.ServeHTTP(w, hr.WithContext(context.WithValue(ctx, principalKey{}, p)))
	})
}

func principalOf(hr *http.Request) auth.Principal {
	p, _ := hr.Context().Value(principalKey{}).(auth.Principal)
	return p
}

// namespaceOf is the caller's namespace: its credential's, or for a
// credential valid everywhere the Warden-Namespace header (or
// ?namespace=), default "default".
func namespaceOf(hr *http.Request, p auth.Principal) (string, *apierr.Error) {
	if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		return p.Namespace, nil
	}
	ns := hr.Header.Get(HeaderNamespace)
	if ns == "" {
		ns = hr.URL.Query().Get("namespace")
	}
	if ns == "" {
		ns = "default"
	}
	if len(ns) > 63 {
		return "", invalid("namespace %q is not a namespace name", ns)
	}
	return ns, nil
}

// readBody reads a request body up to the limit.
func (r *Router) readBody(w http.ResponseWriter, hr *http.Request) ([]byte, *apierr.Error) {
	if hr.ContentLength > r.cfg.MaxBodyBytes {
		return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", r.cfg.MaxBodyBytes)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(r.cfg.Timeouts.WithDefaults().Read))
	b, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, r.cfg.MaxBodyBytes))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", r.cfg.MaxBodyBytes)
		}
		return nil, invalid("read the request body: %s", err)
	}
	return b, nil
}

// handleRespond serves POST /v1/model/respond, /v1/model/stream and
// /v1/chat/completions; the stream path streams whatever the body says.
func (r *Router) handleRespond(stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, hr *http.Request) {
		body, e := r.readBody(w, hr)
		if e != nil {
			writeError(w, e)
			return
		}
		req, err := DecodeChatRequest(body)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		if stream && !req.Stream {
			req.Stream = true
			req.raw["stream"] = json.RawMessage("true")
		}
		r.chat(w, hr, req, openAIResponder{})
	}
}

func (r *Router) chat(w http.ResponseWriter, hr *http.Request, req *ChatRequest, resp responder) {
	ctx := hr.Context()
	c, e := r.newCall(ctx, principalOf(hr), hr, opChat, req.Model, req.Execution)
	if e != nil {
		resp.fail(w, e)
		return
	}
	c.req = req
	c.serve(ctx, w, resp)
}

func (r *Router) handleEmbeddings(w http.ResponseWriter, hr *http.Request) {
	body, e := r.readBody(w, hr)
	if e != nil {
		writeError(w, e)
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		writeError(w, invalid(`the body must be a JSON object such as {"model": "…", "input": "text"}`))
		return
	}
	var model, execution string
	if err := json.Unmarshal(raw["model"], &model); raw["model"] != nil && err != nil {
		writeError(w, invalid("model must be a string"))
		return
	}
	if err := json.Unmarshal(raw["execution"], &execution); raw["execution"] != nil && err != nil {
		writeError(w, invalid("execution must be a string"))
		return
	}
	delete(raw, "execution")
	if in := bytes.TrimSpace(raw["input"]); len(in) == 0 || bytes.Equal(in, []byte("null")) {
		writeError(w, invalid("input is required: a string, an array of strings or of token arrays"))
		return
	}
	c, e := r.newCall(hr.Context(), principalOf(hr), hr, opEmbeddings, model, execution)
	if e != nil {
		writeError(w, e)
		return
	}
	c.embed = raw
	c.dec.Needs.Tokens = int64(len(raw["input"]) / 4)
	c.serve(hr.Context(), w, openAIResponder{})
}

// responder writes answers in the caller's wire format.
type responder interface {
	// answer writes a non-streamed answer (OpenAI JSON).
	answer(w http.ResponseWriter, body []byte) error
	// begin starts a stream.
	begin(w http.ResponseWriter)
	// chunk writes one chunk (OpenAI chunk JSON) and flushes it.
	chunk(w http.ResponseWriter, data []byte) error
	// end ends a stream that completed.
	end(w http.ResponseWriter, u Usage) error
	// streamError ends a stream that failed.
	streamError(w http.ResponseWriter, e *apierr.Error) error
	// fail answers an error before any answer was written.
	fail(w http.ResponseWriter, e *apierr.Error)
}

// openAIResponder writes the OpenAI wire format: JSON, or server-sent
// events "data: {chunk}" ended by "data: [DONE]".
type openAIResponder struct{}

func (openAIResponder) answer(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, err := w.Write(body)
	return err
}

func (openAIResponder) begin(w http.ResponseWriter) { beginSSE(w) }

func beginSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
	doneEvent  = []byte("data: [DONE]\n\n")
)

func (openAIResponder) chunk(w http.ResponseWriter, data []byte) error {
	if _, err := w.Write(dataPrefix); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if _, err := w.Write(eventEnd); err != nil {
		return err
	}
	return flush(w)
}

func flush(w http.ResponseWriter) error {
	return http.NewResponseController(w).Flush()
}

func (openAIResponder) end(w http.ResponseWriter, _ Usage) error {
	if _, err := w.Write(doneEvent); err != nil {
		return err
	}
	return flush(w)
}

// streamError ends an OpenAI stream with an error event, which the
// OpenAI SDKs raise as an error: data: {"error": {...}}.
func (openAIResponder) streamError(w http.ResponseWriter, e *apierr.Error) error {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "type": "server_error", "details": e.Details}})
	if _, err := w.Write(dataPrefix); err != nil {
		return err
	}
	_, _ = w.Write(b)
	_, _ = w.Write(eventEnd)
	return flush(w)
}

func (openAIResponder) fail(w http.ResponseWriter, e *apierr.Error) { writeError(w, e) }

// writeError writes the documented error body. Its error object also has
// OpenAI's fields (message, type, code), so the OpenAI SDKs read it.
func writeError(w http.ResponseWriter, e *apierr.Error) {
	if s, ok := e.Details["retryAfterSeconds"].(int64); ok {
		w.Header().Set("Retry-After", strconv.FormatInt(s, 10))
	}
	body := map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": e.Details, "type": errorType(e.Code)}}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status())
	_, _ = w.Write(b)
}

// errorType is OpenAI's error type for a code.
func errorType(code string) string {
	switch code {
	case apierr.CodeInvalidRequest, apierr.CodeNotFound, apierr.CodePayloadTooLarge:
		return "invalid_request_error"
	case apierr.CodeUnauthenticated:
		return "authentication_error"
	case apierr.CodeForbidden, apierr.CodePolicyDenied:
		return "permission_error"
	case apierr.CodeRateLimited, apierr.CodeBudgetExceeded:
		return "rate_limit_error"
	}
	return "server_error"
}

func asAPIError(err error) *apierr.Error {
	if e, ok := apierr.As(err); ok {
		return e
	}
	return invalid("%s", err)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierr.New(apierr.CodeInternal, "internal error"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// usable returns the Models the caller may call: an agent's route, or
// every Model of the namespace for others.
func (r *Router) usable(hr *http.Request) (p auth.Principal, ns string, ms []*modelEntry, e *apierr.Error) {
	p = principalOf(hr)
	ns, e = namespaceOf(hr, p)
	if e != nil {
		return p, ns, nil, e
	}
	ctx := hr.Context()
	if err := r.cfg.Authz.Authorize(ctx, p, auth.VerbList, ns, "models"); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			return p, ns, nil, apierr.New(apierr.CodeForbidden, "%s may not list models in namespace %q", p.Subject, ns)
		}
		return p, ns, nil, internal(r, ctx, err)
	}
	snap, err := r.catalog.get(ctx, p.Tenant)
	if err != nil {
		return p, ns, nil, internal(r, ctx, err)
	}
	if p.Agent != "" {
		if ar := snap.agents[nsName{ns, p.Agent}]; ar != nil {
			for _, me := range ar.models {
				if me != nil {
					ms = append(ms, me)
				}
			}
		}
		return p, ns, ms, nil
	}
	for k, me := range snap.models {
		if k.ns == ns {
			ms = append(ms, me)
		}
	}
	sortModels(ms)
	return p, ns, ms, nil
}

// handleModels serves GET /v1/models in OpenAI's format.
func (r *Router) handleModels(w http.ResponseWriter, hr *http.Request) {
	_, _, ms, e := r.usable(hr)
	if e != nil {
		writeError(w, e)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, me := range ms {
		out.Data = append(out.Data, model{ID: me.name, Object: "model", Created: 0, OwnedBy: me.spec.Provider})
	}
	writeJSON(w, out)
}

// Capability is one Model's capability vector, as matching uses it.
type Capability struct {
	Name          string  `json:"name"`
	Namespace     string  `json:"namespace"`
	RouteID       string  `json:"routeId"`
	Provider      string  `json:"provider"`
	Model         string  `json:"model"`
	ToolUse       bool    `json:"toolUse"`
	Streaming     bool    `json:"streaming"`
	Vision        bool    `json:"vision"`
	JSONMode      bool    `json:"jsonMode"`
	Embeddings    bool    `json:"embeddings"`
	ContextWindow int64   `json:"contextWindow"`
	InputPerMTok  float64 `json:"inputPerMillion"`
	OutputPerMTok float64 `json:"outputPerMillion"`
	// Unavailable says why the router cannot call the Model.
	Unavailable string `json:"unavailable,omitempty"`
}

// CapabilityList is the answer of GET /v1/models/capabilities.
type CapabilityList struct {
	Namespace string       `json:"namespace"`
	Items     []Capability `json:"items"`
}

func (r *Router) handleCapabilities(w http.ResponseWriter, hr *http.Request) {
	_, ns, ms, e := r.usable(hr)
	if e != nil {
		writeError(w, e)
		return
	}
	out := CapabilityList{Namespace: ns, Items: []Capability{}}
	for _, me := range ms {
		caps := me.spec.Capabilities
		out.Items = append(out.Items, Capability{Name: me.name, Namespace: me.ns, RouteID: me.routeID, Provider: me.spec.Provider,
			Model: me.spec.Model, ToolUse: caps.ToolUse, Streaming: caps.Streaming, Vision: caps.Vision, JSONMode: caps.JSONMode,
			Embeddings: me.spec.Provider != ProviderAnthropic, ContextWindow: caps.ContextWindow,
			InputPerMTok: me.spec.Cost.InputPerMillion, OutputPerMTok: me.spec.Cost.OutputPerMillion, Unavailable: me.broken})
	}
	writeJSON(w, out)
}

// Explanation is the answer of GET /v1/route/{name}/explain.
type Explanation struct {
	Route     string     `json:"route"`
	Namespace string     `json:"namespace"`
	Execution string     `json:"execution"`
	Decisions []Decision `json:"decisions"`
}

// handleExplain serves GET /v1/route/{name}/explain?execution=: the
// recorded decisions of that execution on that route. An agent reads its
// own decisions; others need to read executions in the namespace.
func (r *Router) handleExplain(w http.ResponseWriter, hr *http.Request) {
	p := principalOf(hr)
	ns, e := namespaceOf(hr, p)
	if e != nil {
		writeError(w, e)
		return
	}
	name, execution := hr.PathValue("name"), hr.URL.Query().Get("execution")
	if execution == "" {
		writeError(w, invalid("name the execution with ?execution="))
		return
	}
	ctx := hr.Context()
	if p.Agent == "" {
		if err := r.cfg.Authz.Authorize(ctx, p, auth.VerbGet, ns, "executions"); err != nil {
			if errors.Is(err, auth.ErrForbidden) {
				writeError(w, apierr.New(apierr.CodeForbidden, "%s may not read executions in namespace %q", p.Subject, ns))
				return
			}
			writeError(w, internal(r, ctx, err))
			return
		}
	} else if err := r.cfg.Authz.Authorize(ctx, p, authz.VerbCreate, ns, authz.ObjModelCalls); err != nil {
		writeError(w, apierr.New(apierr.CodeForbidden, "%s may not read routing decisions in namespace %q", p.Subject, ns))
		return
	}
	// Read-your-writes: the decisions of calls already answered are
	// written before they are read.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.rec.flush(fctx); err != nil {
		writeError(w, internal(r, ctx, err))
		return
	}
	var ds []store.RouteDecision
	err := r.st.View(ctx, p.Tenant, func(ctx context.Context, rd store.Reader) error {
		var err error
		ds, err = rd.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: ns, Execution: execution, Route: name, Limit: store.MaxPageSize})
		return err
	})
	if err != nil {
		writeError(w, internal(r, ctx, err))
		return
	}
	out := Explanation{Route: name, Namespace: ns, Execution: execution, Decisions: []Decision{}}
	for _, d := range ds {
		if p.Agent != "" && d.Agent != p.Agent {
			continue
		}
		var dec Decision
		if err := json.Unmarshal(d.Data, &dec); err != nil {
			writeError(w, internal(r, ctx, err))
			return
		}
		out.Decisions = append(out.Decisions, dec)
	}
	if len(out.Decisions) == 0 {
		writeError(w, apierr.New(apierr.CodeNotFound, "no routing decision of route %q in execution %q of namespace %q", name, execution, ns))
		return
	}
	writeJSON(w, out)
}
