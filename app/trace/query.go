package trace

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/store"
)

// Paging limits of the query API.
const (
	defaultPage = 100
	maxPage     = 1000
	// MaxTraceSpans caps the spans GET /v1/traces/{id} returns.
	MaxTraceSpans = 20000
)

const localPrincipal = "warden.trace.principal"

// App returns the query API (port 8086): traces, spans, metrics, OCSF
// events, and Warden's operational metrics at /metrics.
func (s *Service) App() *fiber.App {
	var t listener.Timeouts
	app := fiber.New(t.FiberConfig(fiber.Config{
		AppName:               "warden-trace",
		BodyLimit:             64 << 10,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
	}))
	t.Harden(app)
	app.Use(listener.RequestID, listener.Recover(s.log))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/metrics", s.handlePrometheus)
	v1 := app.Group("/v1", listener.APIHeaders, s.authenticate)
	// Span answers are written into reused buffers.
	bufs := &sync.Pool{}
	v1.Get("/traces/:id", func(c *fiber.Ctx) error { return s.handleTraceGet(c, bufs) })
	v1.Get("/traces", s.handleTraceList)
	v1.Get("/spans", func(c *fiber.Ctx) error { return s.handleSpanList(c, bufs) })
	v1.Get("/metrics", s.handleMetrics)
	v1.Get("/ocsf", s.handleOCSFList)
	return app
}

func (s *Service) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.As(err, &fe) && fe.Code == http.StatusNotFound:
			e = apierr.New(apierr.CodeNotFound, "%s", fe.Message)
		case errors.As(err, &fe) && fe.Code == http.StatusRequestEntityTooLarge:
			e = apierr.New(apierr.CodePayloadTooLarge, "the request body is too large")
		case errors.As(err, &fe) && fe.Code < 500:
			e = apierr.New(apierr.CodeInvalidRequest, "%s", fe.Message)
		case errors.Is(err, context.DeadlineExceeded):
			e = apierr.New(apierr.CodeTimeout, "the request timed out")
		default:
			id := listener.RequestIDOf(c)
			s.log.ErrorContext(c.UserContext(), "internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	e = listener.NameRequest(e, listener.RequestIDOf(c))
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}

func (s *Service) authenticate(c *fiber.Ctx) error {
	p, err := s.cfg.Query.Authenticate(c.UserContext(), c.Get(fiber.HeaderAuthorization))
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden-trace"`)
			return apierr.New(apierr.CodeUnauthenticated, "a valid credential is required: send Authorization: Bearer <api key or token>")
		}
		return err
	}
	c.Locals(localPrincipal, p)
	c.SetUserContext(auth.WithPrincipal(c.UserContext(), p))
	return c.Next()
}

// namespaces returns the namespaces the request reads: ?namespace= or the
// credential's own namespace, each authorized; nil means every namespace
// of the tenant, which needs a tenant-wide grant.
func (s *Service) namespaces(c *fiber.Ctx, verb string) (auth.Principal, []string, error) {
	p := c.Locals(localPrincipal).(auth.Principal)
	ns := c.Query("namespace")
	if ns == "" && p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		ns = p.Namespace
	}
	if err := s.cfg.Authz.Authorize(c.UserContext(), p, verb, ns, authz.ObjTraces); err != nil {
		if ns == "" && errors.Is(err, auth.ErrForbidden) {
			return p, nil, apierr.New(apierr.CodeForbidden, "%s; name a namespace you may read with ?namespace=", err.Error())
		}
		return p, nil, authError(err)
	}
	if ns == "" {
		return p, nil, nil
	}
	return p, []string{ns}, nil
}

// parseTraceID parses a trace id of 32 hex digits.
func parseTraceID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, apierr.New(apierr.CodeInvalidRequest, "trace id %q must be 32 hex digits", s)
	}
	copy(id[:], b)
	return id, nil
}

func (s *Service) handleTraceGet(c *fiber.Ctx, bufs *sync.Pool) error {
	id, err := parseTraceID(c.Params("id"))
	if err != nil {
		return err
	}
	p, nss, err := s.namespaces(c, auth.VerbGet)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if c.Query("format") == "otlp" {
		t, err := readTrace(ctx, s.st, p.Tenant, nss, id)
		if errors.Is(err, ErrTraceNotFound) {
			return apierr.New(apierr.CodeNotFound, "trace %s not found", c.Params("id"))
		}
		if err != nil {
			return err
		}
		b, err := s.otlpTrace(t.rows, t.resources)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(b)
	}
	t, err := readTrace(ctx, s.st, p.Tenant, nss, id)
	if errors.Is(err, ErrTraceNotFound) {
		return apierr.New(apierr.CodeNotFound, "trace %s not found", c.Params("id"))
	}
	if err != nil {
		return err
	}
	return sendJSON(c, bufs, func(dst []byte) ([]byte, error) {
		return newSpanWriter(t.resources).appendTraceJSON(dst, hex.EncodeToString(id[:]), t.rows, t.truncated)
	})
}

// sendJSON answers with the JSON that write appends, written into a
// buffer of bufs.
func sendJSON(c *fiber.Ctx, bufs *sync.Pool, write func(dst []byte) ([]byte, error)) error {
	bp, _ := bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b, err := write((*bp)[:0])
	if err == nil {
		c.Response().SetBody(b)
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	}
	// A buffer grown by one huge answer is left to the collector.
	if cap(b) <= maxPooledBuffer {
		*bp = b
		bufs.Put(bp)
	}
	return err
}

// maxPooledBuffer bounds the answer buffers kept for reuse.
const maxPooledBuffer = 8 << 20

// dedupe drops spans stored twice (a retried export).
func dedupe(rows []store.Span) []store.Span {
	seen := make(map[[8]byte]bool, len(rows))
	out := rows[:0]
	for _, r := range rows {
		if seen[r.SpanID] {
			continue
		}
		seen[r.SpanID] = true
		out = append(out, r)
	}
	return out
}

// otlpTrace encodes rows as OTLP/JSON TracesData, spans grouped under
// their resource and scope.
func (s *Service) otlpTrace(rows []store.Span, resources map[int64]*tracepb.ResourceSpans) ([]byte, error) {
	td := &tracepb.TracesData{}
	groups := map[int64]*tracepb.ResourceSpans{}
	for i := range rows {
		sp, err := rebuild(&rows[i])
		if err != nil {
			return nil, err
		}
		g := groups[rows[i].Resource]
		if g == nil {
			res := resources[rows[i].Resource]
			g = &tracepb.ResourceSpans{Resource: res.GetResource(), SchemaUrl: res.GetSchemaUrl()}
			ss := &tracepb.ScopeSpans{}
			if scopes := res.GetScopeSpans(); len(scopes) > 0 {
				ss.Scope, ss.SchemaUrl = scopes[0].GetScope(), scopes[0].GetSchemaUrl()
			}
			g.ScopeSpans = []*tracepb.ScopeSpans{ss}
			groups[rows[i].Resource] = g
			td.ResourceSpans = append(td.ResourceSpans, g)
		}
		g.ScopeSpans[0].Spans = append(g.ScopeSpans[0].Spans, sp)
	}
	return encodeOTLPJSON(td)
}

// timeParam parses ?name= as an RFC 3339 time or a duration back from now;
// zero when absent.
func (s *Service) timeParam(c *fiber.Ctx, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return s.now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, apierr.New(apierr.CodeInvalidRequest, "%s=%q is neither a duration such as 1h nor an RFC 3339 time", name, v)
	}
	return t, nil
}

func limitParam(c *fiber.Ctx) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return defaultPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apierr.New(apierr.CodeInvalidRequest, "limit=%q must be a positive number", v)
	}
	return min(n, maxPage), nil
}

// continue tokens carry the cursor after the last span of a page.
func encodeCursor(c store.SpanCursor) string {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(c.Start))
	copy(b[8:], c.SpanID[:])
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*store.SpanCursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return nil, apierr.New(apierr.CodeInvalidRequest, "the continue token is not one this API issued")
	}
	c := &store.SpanCursor{Start: int64(binary.BigEndian.Uint64(b))}
	copy(c.SpanID[:], b[8:])
	return c, nil
}

// spanFilter builds the filter of a list request: selector, time range and
// continue token.
func (s *Service) spanFilter(c *fiber.Ctx, nss []string) (store.SpanFilter, error) {
	sel, err := ParseSelector(c.Query("selector"))
	if err != nil {
		return store.SpanFilter{}, apierr.New(apierr.CodeInvalidRequest, "selector: %s", err)
	}
	f := sel.filter()
	if sel.Namespace != "" {
		if nss != nil && nss[0] != sel.Namespace {
			return f, apierr.New(apierr.CodeInvalidRequest, "the selector's namespace=%s differs from the namespace read (%s)", sel.Namespace, nss[0])
		}
		nss = []string{sel.Namespace}
	}
	f.Namespaces = nss
	if e := c.Query("execution"); e != "" {
		f.Execution = e
	}
	since, err := s.timeParam(c, "since")
	if err != nil {
		return f, err
	}
	until, err := s.timeParam(c, "until")
	if err != nil {
		return f, err
	}
	if !since.IsZero() {
		f.Since = since.UnixNano()
	}
	if !until.IsZero() {
		f.Until = until.UnixNano()
	}
	if f.After, err = decodeCursor(c.Query("continue")); err != nil {
		return f, err
	}
	return f, nil
}

func (s *Service) handleTraceList(c *fiber.Ctx) error {
	p, nss, err := s.namespaces(c, auth.VerbList)
	if err != nil {
		return err
	}
	f, err := s.spanFilter(c, nss)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	// Scan matching spans newest first, collecting distinct traces.
	var ids [][16]byte
	seen := map[[16]byte]bool{}
	var next string
	f.Limit = max(limit*4, 256)
	for len(ids) < limit {
		rows, err := s.st.SpanList(ctx, p.Tenant, f)
		if err != nil {
			return err
		}
		for i, r := range rows {
			if !seen[r.TraceID] {
				seen[r.TraceID] = true
				ids = append(ids, r.TraceID)
				if len(ids) == limit {
					if i < len(rows)-1 || len(rows) == f.Limit {
						next = encodeCursor(store.SpanCursor{Start: r.Start, SpanID: r.SpanID})
					}
					break
				}
			}
		}
		if len(rows) < f.Limit || len(ids) == limit {
			break
		}
		last := rows[len(rows)-1]
		f.After = &store.SpanCursor{Start: last.Start, SpanID: last.SpanID}
	}
	sums, err := s.st.TraceSummaryList(ctx, p.Tenant, nss, ids)
	if err != nil {
		return err
	}
	byID := map[[16]byte]store.TraceSummary{}
	for _, t := range sums {
		byID[t.TraceID] = t
	}
	out := TraceList{Kind: "TraceList", Metadata: ListMeta{Continue: next}, Items: []TraceSummary{}}
	for _, id := range ids {
		t, ok := byID[id]
		if !ok {
			continue
		}
		out.Items = append(out.Items, TraceSummary{TraceID: hex.EncodeToString(id[:]), Root: t.Root, Service: t.Service,
			StartTime: time.Unix(0, t.Start).UTC(), DurationMs: float64(t.End-t.Start) / 1e6, Spans: t.Spans, Errors: t.Errors})
	}
	return c.JSON(out)
}

func (s *Service) handleSpanList(c *fiber.Ctx, bufs *sync.Pool) error {
	p, nss, err := s.namespaces(c, auth.VerbList)
	if err != nil {
		return err
	}
	f, err := s.spanFilter(c, nss)
	if err != nil {
		return err
	}
	if f.Execution == "" && c.Query("selector") == "" {
		return apierr.New(apierr.CodeInvalidRequest, "name the spans: ?execution={id} or ?selector=…")
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	f.Limit = limit + 1
	ctx := c.UserContext()
	rows, raw, err := s.st.SpanListResources(ctx, p.Tenant, f)
	if err != nil {
		return err
	}
	var cont string
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		cont = encodeCursor(store.SpanCursor{Start: last.Start, SpanID: last.SpanID})
	}
	rows = dedupe(rows)
	resources, err := decodeResources(raw)
	if err != nil {
		return err
	}
	return sendJSON(c, bufs, func(dst []byte) ([]byte, error) {
		return newSpanWriter(resources).appendSpanListJSON(dst, cont, rows)
	})
}

func (s *Service) handleMetrics(c *fiber.Ctx) error {
	p, nss, err := s.namespaces(c, auth.VerbGet)
	if err != nil {
		return err
	}
	raw := c.Query("query")
	q, err := ParseMetricQuery(raw)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "query: %s", err)
	}
	at, err := s.timeParam(c, "time")
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = s.now()
	}
	// Aggregates still in memory count too.
	s.writer.FlushRollups(c.UserContext(), p.Tenant)
	// The window covers whole minutes: from the minute the window starts
	// in to the end of the minute of at.
	from := at.Add(-q.Window).Unix() / 60 * 60
	to := at.Unix()/60*60 + 60
	rows, err := s.st.SpanRollupList(c.UserContext(), p.Tenant, store.RollupFilter{Namespaces: nss, Since: from, Until: to,
		Equal: q.Equal, NotEqual: q.NotEqual, GroupBy: q.By, Need: q.needs()})
	if err != nil {
		return err
	}
	return c.JSON(MetricResult{Query: raw, ResultType: "vector", Unit: q.Unit(), Time: at.UTC(), Window: q.Window.String(), Result: q.evaluate(rows)})
}

func (s *Service) handleOCSFList(c *fiber.Ctx) error {
	p, nss, err := s.namespaces(c, auth.VerbList)
	if err != nil {
		return err
	}
	f := store.OCSFFilter{Namespaces: nss}
	if v := c.Query("class_uid"); v != "" {
		if f.ClassUID, err = strconv.Atoi(v); err != nil || f.ClassUID <= 0 {
			return apierr.New(apierr.CodeInvalidRequest, "class_uid=%q must be a positive number", v)
		}
	}
	since, err := s.timeParam(c, "since")
	if err != nil {
		return err
	}
	until, err := s.timeParam(c, "until")
	if err != nil {
		return err
	}
	if !since.IsZero() {
		f.Since = since.UnixMilli()
	}
	if !until.IsZero() {
		f.Until = until.UnixMilli()
	}
	if v := c.Query("continue"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(b) != 8 {
			return apierr.New(apierr.CodeInvalidRequest, "the continue token is not one this API issued")
		}
		f.Before = int64(binary.BigEndian.Uint64(b))
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	f.Limit = limit + 1
	evs, err := s.st.OCSFEventList(c.UserContext(), p.Tenant, f)
	if err != nil {
		return err
	}
	out := OCSFEventList{Kind: "OCSFEventList", Items: []OCSFEventView{}}
	if len(evs) > limit {
		evs = evs[:limit]
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(evs[len(evs)-1].ID))
		out.Metadata.Continue = base64.RawURLEncoding.EncodeToString(b)
	}
	for _, e := range evs {
		var body map[string]any
		if err := json.Unmarshal(e.Data, &body); err != nil {
			return fmt.Errorf("decode stored OCSF event %d: %w", e.ID, err)
		}
		out.Items = append(out.Items, OCSFEventView{Namespace: e.Namespace, Time: time.UnixMilli(e.Time).UTC(), ClassUID: e.ClassUID, Event: body})
	}
	return c.JSON(out)
}

// handlePrometheus serves the operational metrics, unauthenticated: they
// count every tenant together and name none.
func (s *Service) handlePrometheus(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/plain; version=0.0.4; charset=utf-8")
	return s.metrics.WritePrometheus(c.Response().BodyWriter())
}
