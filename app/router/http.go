package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

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

// App returns the router's Fiber application (port 8083).
func (r *Router) App() *fiber.App {
	t := r.cfg.Timeouts
	app := fiber.New(t.FiberConfig(fiber.Config{
		AppName:   "warden-router",
		BodyLimit: int(r.cfg.MaxBodyBytes),
		// connLimit keeps the connections to MaxConns; fasthttp's own
		// limit, whose refusal is not in the documented shape, is set
		// above it for a connection closed whose worker has not ended.
		Concurrency:           r.cfg.MaxConns + r.cfg.MaxInFlight,
		DisableStartupMessage: true,
		ErrorHandler:          r.errorHandler,
	}))
	t.Harden(app)
	app.Use(listener.RequestID, listener.Recover(r.log))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/v1/model/respond", r.handle(r.limited(r.authed(r.handleRespond(false), writeError), writeError)))
	app.Post("/v1/model/stream", r.handle(r.limited(r.authed(r.handleRespond(true), writeError), writeError)))
	app.Post("/v1/chat/completions", r.handle(r.limited(r.authed(r.handleRespond(false), writeError), writeError)))
	app.Post("/v1/embeddings", r.handle(r.limited(r.authed(r.handleEmbeddings, writeError), writeError)))
	app.Post("/v1/messages", r.handle(r.limited(r.authed(r.handleMessages, writeAnthError), writeAnthError)))
	app.Get("/v1/models", r.handle(r.authed(r.handleModels, writeError)))
	app.Get("/v1/models/capabilities", r.handle(r.authed(r.handleCapabilities, writeError)))
	app.Get("/v1/route/:name/explain", r.handle(r.authed(r.handleExplain, writeError)))
	app.Use(func(c *fiber.Ctx) error {
		return apierr.New(apierr.CodeNotFound, "no route %s %s on the model router", c.Method(), c.Path())
	})
	return app
}

// errorHandler answers the errors that reach Fiber (an unknown route, a
// body over the limit, a panic) in the wire format of the path.
func (r *Router) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.As(err, &fe) && fe.Code == fiber.StatusRequestEntityTooLarge:
			e = tooLarge(r.cfg.MaxBodyBytes)
		case errors.As(err, &fe) && fe.Code == fiber.StatusNotFound:
			e = apierr.New(apierr.CodeNotFound, "no route %s %s on the model router", c.Method(), c.Path())
		case errors.As(err, &fe) && fe.Code < 500:
			e = invalid("%s", fe.Message)
		default:
			id := listener.RequestIDOf(c)
			r.log.ErrorContext(c.UserContext(), "model router internal error", "err", err, "method", c.Method(),
				"path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	w := &reply{c: c}
	if c.Path() == "/v1/messages" {
		writeAnthError(w, e)
	} else {
		writeError(w, e)
	}
	return nil
}

func tooLarge(limit int64) *apierr.Error {
	return apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", limit)
}

// reply is one call's request, as far as the router keeps it, and its
// answer under construction. Fiber reuses its request and response once
// the handler returns, so what a reply keeps of the request is copied; a
// streamed answer is written by a stream writer after the handler
// returned, through bw, and no longer touches c.
type reply struct {
	// ctx is the call's context, cancelled when the caller goes away.
	ctx context.Context
	p   auth.Principal
	// c is the request and response, nil once the answer streams.
	c *fiber.Ctx
	// sb is the streamed answer's body, set once the handler has
	// returned.
	sb *streamBody
	// next and stop produce a streamed answer (stream).
	next func() bool
	stop func(ended bool)
	// done runs once the answer is written (after).
	done []func()
}

// header returns the request header name, copied.
func (w *reply) header(name string) string { return strings.Clone(w.c.Get(name)) }

// query returns the query parameter name, copied.
func (w *reply) query(name string) string { return strings.Clone(w.c.Query(name)) }

func (w *reply) set(name, value string) { w.c.Set(name, value) }

func (w *reply) add(name, value string) { w.c.Response().Header.Add(name, value) }

func (w *reply) status(code int) { w.c.Status(code) }

// Write appends to the answer's body, or to the next piece of its stream.
func (w *reply) Write(b []byte) (int, error) {
	if w.sb != nil {
		return w.sb.buf.Write(b)
	}
	w.c.Response().AppendBody(b)
	return len(b), nil
}

// stream ends the handler with the answer's status and headers set, and
// has the body streamed: the server's own goroutine calls next for each
// piece as it has sent the one before (next writes it to w and returns
// false once it has written the last), and stop once, when the body ends
// or the caller went away first (ended false). next and stop must not use
// Fiber's context.
func (w *reply) stream(next func() bool, stop func(ended bool)) { w.next, w.stop = next, stop }

// streamBody is a streamed answer read by the server's goroutine, which
// writes each Read as one chunk and flushes it: a piece goes out on the
// goroutine that produced it, with no pipe or writer goroutine between.
type streamBody struct {
	w   *reply
	log *slog.Logger
	id  string
	buf bytes.Buffer
	// ended says next has written the last piece (or panicked).
	ended  bool
	closed bool
}

func (b *streamBody) Read(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			listener.LogRecovered(b.w.ctx, b.log, "model router stream", b.id, v)
			b.ended = true
			n, err = 0, errStreamPanic
		}
	}()
	for b.buf.Len() == 0 {
		if b.ended {
			return 0, io.EOF
		}
		b.ended = !b.w.next()
	}
	return b.buf.Read(p)
}

// Close ends the stream: the server calls it once the body is sent, or
// when writing it failed.
func (b *streamBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	defer b.w.finish()
	defer listener.LogPanic(b.w.ctx, b.log, "model router stream", b.id)
	b.w.stop(b.ended)
	return nil
}

var errStreamPanic = errors.New("model router stream: internal error")

// handle serves h on Fiber. The call's context ends when the caller goes
// away or the answer is written.
func (r *Router) handle(h func(*reply)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithCancel(c.UserContext())
		w := &reply{c: c, ctx: ctx}
		w.after(watch(c.Context().Conn(), cancel))
		w.after(cancel)
		r.serveReply(c, w, h)
		return nil
	}
}

// after has f run once the answer is written (in order of the calls).
func (w *reply) after(f func()) { w.done = append(w.done, f) }

func (w *reply) finish() {
	for _, f := range w.done {
		f()
	}
}

// serveReply runs h; a streamed answer then goes on as the server reads
// its body, which finishes the reply when it is closed (and recovers from
// a panic, which Fiber's Recover no longer sees).
func (r *Router) serveReply(c *fiber.Ctx, w *reply, h func(*reply)) {
	streaming := false
	defer func() {
		if !streaming {
			w.finish()
		}
	}()
	h(w)
	if w.next == nil {
		return
	}
	streaming = true
	w.sb = &streamBody{w: w, log: r.log, id: listener.RequestIDOf(c)}
	w.c = nil
	c.Context().SetBodyStream(w.sb, -1)
}

// authed verifies the credential: a workload token of audience
// warden:model-router, an API key or a person's token, as the tool
// gateway does. Anthropic's SDK sends its key as x-api-key. fail answers
// an error in the caller's wire format.
func (r *Router) authed(next func(*reply), fail func(*reply, *apierr.Error)) func(*reply) {
	return func(w *reply) {
		header := w.header(fiber.HeaderAuthorization)
		if header == "" {
			if k := w.c.Get("x-api-key"); k != "" {
				header = "Bearer " + k
			}
		}
		p, err := r.cfg.Authn.Authenticate(w.ctx, header)
		if err != nil {
			if errors.Is(err, auth.ErrUnauthenticated) {
				w.set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden-model-router"`)
				fail(w, apierr.New(apierr.CodeUnauthenticated,
					"a valid credential is required: send Authorization: Bearer <workload token for audience warden:model-router, or an API key>"))
				return
			}
			fail(w, internal(r, w.ctx, err))
			return
		}
		w.ctx, w.p = auth.WithPrincipal(w.ctx, p), p
		next(w)
	}
}

// namespaceOf is the caller's namespace: its credential's, or for a
// credential valid everywhere the Warden-Namespace header (or
// ?namespace=), default "default".
func namespaceOf(w *reply) (string, *apierr.Error) {
	p := w.p
	if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		return p.Namespace, nil
	}
	ns := w.header(HeaderNamespace)
	if ns == "" {
		ns = w.query("namespace")
	}
	if ns == "" {
		ns = "default"
	}
	if len(ns) > 63 {
		return "", invalid("namespace %q is not a namespace name", ns)
	}
	return ns, nil
}

// readBody returns a copy of the request body; Fiber has read it, within
// the size limit (BodyLimit) and the read timeout (Timeouts.Harden).
func (r *Router) readBody(w *reply) ([]byte, *apierr.Error) {
	b := w.c.Body()
	if int64(len(b)) > r.cfg.MaxBodyBytes {
		return nil, tooLarge(r.cfg.MaxBodyBytes)
	}
	return bytes.Clone(b), nil
}

// handleRespond serves POST /v1/model/respond, /v1/model/stream and
// /v1/chat/completions; the stream path streams whatever the body says.
func (r *Router) handleRespond(stream bool) func(*reply) {
	return func(w *reply) {
		body, e := r.readBody(w)
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
		r.chat(w, req, openAIResponder{})
	}
}

func (r *Router) chat(w *reply, req *ChatRequest, resp responder) {
	ctx := w.ctx
	c, e := r.newCall(ctx, w, opChat, req.Model, req.Execution)
	if e != nil {
		resp.fail(w, e)
		return
	}
	c.req = req
	c.serve(ctx, w, resp)
}

func (r *Router) handleEmbeddings(w *reply) {
	body, e := r.readBody(w)
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
	c, e := r.newCall(w.ctx, w, opEmbeddings, model, execution)
	if e != nil {
		writeError(w, e)
		return
	}
	c.embed = raw
	c.dec.Needs.Tokens = int64(len(raw["input"]) / 4)
	c.serve(w.ctx, w, openAIResponder{})
}

// responder writes answers in the caller's wire format.
type responder interface {
	// answer writes a non-streamed answer (OpenAI JSON).
	answer(w *reply, body []byte) error
	// begin starts a stream.
	begin(w *reply)
	// chunk writes one chunk (OpenAI chunk JSON); it goes out as one piece
	// of the stream (reply.stream).
	chunk(w *reply, data []byte) error
	// end ends a stream that completed.
	end(w *reply, u Usage) error
	// streamError ends a stream that failed.
	streamError(w *reply, e *apierr.Error) error
	// fail answers an error before any answer was written.
	fail(w *reply, e *apierr.Error)
}

// openAIResponder writes the OpenAI wire format: JSON, or server-sent
// events "data: {chunk}" ended by "data: [DONE]".
type openAIResponder struct{}

func (openAIResponder) answer(w *reply, body []byte) error {
	w.set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	_, err := w.Write(body)
	return err
}

func (openAIResponder) begin(w *reply) { beginSSE(w) }

func beginSSE(w *reply) {
	w.set(fiber.HeaderContentType, "text/event-stream")
	w.set(fiber.HeaderCacheControl, "no-cache")
	w.set("X-Accel-Buffering", "no")
	w.status(fiber.StatusOK)
}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
	doneEvent  = []byte("data: [DONE]\n\n")
)

func (openAIResponder) chunk(w *reply, data []byte) error {
	if _, err := w.Write(dataPrefix); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write(eventEnd)
	return err
}

func (openAIResponder) end(w *reply, _ Usage) error {
	_, err := w.Write(doneEvent)
	return err
}

// streamError ends an OpenAI stream with an error event, which the
// OpenAI SDKs raise as an error: data: {"error": {...}}.
func (openAIResponder) streamError(w *reply, e *apierr.Error) error {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "type": "server_error", "details": e.Details}})
	if _, err := w.Write(dataPrefix); err != nil {
		return err
	}
	_, _ = w.Write(b)
	_, _ = w.Write(eventEnd)
	return nil
}

func (openAIResponder) fail(w *reply, e *apierr.Error) { writeError(w, e) }

// writeError writes the documented error body. Its error object also has
// OpenAI's fields (message, type, code), so the OpenAI SDKs read it.
func writeError(w *reply, e *apierr.Error) {
	if s, ok := e.Details["retryAfterSeconds"].(int64); ok {
		w.set(fiber.HeaderRetryAfter, strconv.FormatInt(s, 10))
	}
	w.set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	w.status(e.Status())
	_, _ = w.Write(errorBody(e))
}

// errorBody is the documented error body of e.
func errorBody(e *apierr.Error) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": e.Details, "type": errorType(e.Code)}})
	return b
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

func writeJSON(w *reply, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierr.New(apierr.CodeInternal, "internal error"))
		return
	}
	w.set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	_, _ = w.Write(b)
}

// usable returns the Models the caller may call: an agent's route, or
// every Model of the namespace for others.
func (r *Router) usable(w *reply) (p auth.Principal, ns string, ms []*modelEntry, e *apierr.Error) {
	p = w.p
	ns, e = namespaceOf(w)
	if e != nil {
		return p, ns, nil, e
	}
	ctx := w.ctx
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
func (r *Router) handleModels(w *reply) {
	_, _, ms, e := r.usable(w)
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

func (r *Router) handleCapabilities(w *reply) {
	_, ns, ms, e := r.usable(w)
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
func (r *Router) handleExplain(w *reply) {
	p := w.p
	ns, e := namespaceOf(w)
	if e != nil {
		writeError(w, e)
		return
	}
	name, execution := strings.Clone(w.c.Params("name")), w.query("execution")
	if execution == "" {
		writeError(w, invalid("name the execution with ?execution="))
		return
	}
	ctx := w.ctx
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
