package aos

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"
)

// Governor decides the steps an AOS caller reports. The gateway implements
// it: it records tool calls and evaluates policy and guardians.
type Governor interface {
	// ToolCallRequest decides a steps/toolCallRequest, before the tool runs.
	ToolCallRequest(ctx context.Context, req *Request, p *ToolCallRequestParams) (Decision, error)
	// ToolCallResult decides a steps/toolCallResult, after the tool ran.
	ToolCallResult(ctx context.Context, req *Request, p *ToolCallResultParams) (Decision, error)
	// Step decides every other method the schema defines except ping,
	// which Serve answers itself. req.Params holds the validated params.
	Step(ctx context.Context, req *Request) (Decision, error)
}

// HandlerConfig configures a Handler. Every field is optional.
type HandlerConfig struct {
	// Schema validates requests and responses; default DefaultSchema().
	Schema *Schema
	// Now stamps ping answers; default time.Now.
	Now func() time.Time
	// Version is the version ping answers with; default Schema.Version.
	Version string
	// Logger receives governor failures and invalid decisions, which
	// callers only see as "Internal error"; default slog.Default().
	Logger *slog.Logger
}

// Handler answers AOS requests with a Governor's decisions. It knows no
// transport: the HTTP route reads the body, calls Serve and writes what
// it returns. It is safe for concurrent use.
type Handler struct {
	gov Governor
	cfg HandlerConfig
}

// NewHandler returns a Handler that asks gov.
func NewHandler(gov Governor, cfg HandlerConfig) (*Handler, error) {
	if gov == nil {
		return nil, errors.New("aos: NewHandler: governor is nil")
	}
	if cfg.Schema == nil {
		s, err := DefaultSchema()
		if err != nil {
			return nil, err
		}
		cfg.Schema = s
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = cfg.Schema.Version
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Handler{gov: gov, cfg: cfg}, nil
}

// Serve answers one request body with a Handler built from gov and the
// defaults of HandlerConfig; see Handler.Serve.
func Serve(ctx context.Context, gov Governor, body []byte) (status int, resp []byte) {
	h, err := NewHandler(gov, HandlerConfig{})
	if err != nil {
		b, _ := marshalJSON(ErrorResponse(NoID, internalError()))
		return http.StatusOK, b
	}
	return h.Serve(ctx, body)
}

// Serve answers one request body. The response is always a single
// JSON-RPC response object that is valid against the AOS schema, and the
// status is always 200: a JSON-RPC error is an answer, carried in the
// body, as JSON-RPC over HTTP servers (MCP, A2A) do; a 4xx or 5xx would
// make HTTP clients and proxies treat a refused step as a broken
// transport (and retry it). The status is returned anyway so the route
// writes what the protocol layer decides rather than assuming it.
//
// A governor error that is (or wraps) an *Error is answered with it; any
// other error is logged and answered as "Internal error", never with its
// text. So is a decision that breaks the rules of Decision or does not
// validate against the schema.
func (h *Handler) Serve(ctx context.Context, body []byte) (status int, resp []byte) {
	d, id, e := h.cfg.Schema.decode(body)
	if e != nil {
		return http.StatusOK, h.encode(ctx, ErrorResponse(id, e))
	}
	req := d.req
	if req.Method == MethodPing {
		pong := PingResult{Status: "connected", Version: h.cfg.Version, Timestamp: h.cfg.Now().UTC().Format(time.RFC3339Nano)}
		return http.StatusOK, h.encode(ctx, &Response{JSONRPC: JSONRPCVersion, ID: req.ID, Result: pong})
	}
	var dec Decision
	var err error
	switch req.Method {
	case MethodToolCallRequest:
		dec, err = h.gov.ToolCallRequest(ctx, req, toolCallRequestParams(d.params))
	case MethodToolCallResult:
		dec, err = h.gov.ToolCallResult(ctx, req, toolCallResultParams(d.params))
	default:
		dec, err = h.gov.Step(ctx, req)
	}
	if err != nil {
		return http.StatusOK, h.encode(ctx, ErrorResponse(req.ID, h.governorError(ctx, req, err)))
	}
	if err := dec.check(req.Method); err != nil {
		h.cfg.Logger.ErrorContext(ctx, "aos: governor returned an invalid decision",
			"method", req.Method, "id", string(req.ID), "err", err)
		return http.StatusOK, h.encode(ctx, ErrorResponse(req.ID, internalError()))
	}
	return http.StatusOK, h.encode(ctx, Result(req.ID, dec))
}

// governorError picks the JSON-RPC error for a governor's error.
func (h *Handler) governorError(ctx context.Context, req *Request, err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok && e != nil {
		return e
	}
	h.cfg.Logger.ErrorContext(ctx, "aos: governor failed", "method", req.Method, "id", string(req.ID), "err", err)
	return internalError()
}

// encode returns the JSON of resp after checking it against the schema.
// What fails (governor data that cannot be encoded, a modifiedRequest that
// is not a valid AOS request) is logged and replaced by an internal error,
// so nothing invalid leaves the handler.
func (h *Handler) encode(ctx context.Context, resp *Response) []byte {
	b, err := marshalJSON(resp)
	if err == nil {
		var v any
		if v, err = parseJSON(b); err == nil {
			err = h.cfg.Schema.ValidateResponse(v)
		}
	}
	if err == nil {
		return b
	}
	h.cfg.Logger.ErrorContext(ctx, "aos: response does not validate against the AOS schema",
		"id", string(resp.ID), "err", err)
	b, _ = marshalJSON(ErrorResponse(resp.ID, internalError()))
	return b
}

// withIDForSchema returns a response value to validate: v itself, or, for
// an error response whose id is null (NoID, as JSON-RPC 2.0 requires when
// the request's id could not be read), a copy with a string id, since the
// schema knows no null id; every other member is checked as sent.
func withIDForSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if id, has := m["id"]; !has || id != nil {
		return v
	}
	cp := make(map[string]any, len(m))
	for k, x := range m {
		cp[k] = x
	}
	cp["id"] = ""
	return cp
}
