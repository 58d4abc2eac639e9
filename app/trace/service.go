package trace

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
)

// Authenticator verifies an Authorization header value.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (auth.Principal, error)
}

// Authorizer decides whether a principal may act (app/authz).
type Authorizer interface {
	Authorize(ctx context.Context, p auth.Principal, verb, namespace, object string) error
}

// Config configures the trace service.
type Config struct {
	// Store holds the spans (required).
	Store store.Store
	// Ingest authenticates OTLP and OCSF senders: workload tokens for the
	// audience warden:trace and API keys (required).
	Ingest Authenticator
	// Query authenticates readers of the query API: API keys, people and
	// control-plane workload tokens (required).
	Query Authenticator
	// Authz decides every request (required).
	Authz Authorizer
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Limits bound a span.
	Limits Limits
	// MaxRequestBytes caps an ingest request body, after decompression;
	// default 16 MiB.
	MaxRequestBytes int
	// QueueSpans bounds the spans waiting to be written; default 131072.
	QueueSpans int
	// BatchSpans caps the spans of one transaction; default 8192.
	BatchSpans int
	// Writers is the number of concurrent writers; default 1 (the embedded
	// store has one writer connection; give Postgres more).
	Writers int
	// RetryAfter is what a refused sender is told to wait; default 1s.
	RetryAfter time.Duration
}

// WithDefaults returns c with zero fields replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Limits = c.Limits.WithDefaults()
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 16 << 20
	}
	if c.QueueSpans <= 0 {
		c.QueueSpans = 1 << 17
	}
	if c.BatchSpans <= 0 {
		c.BatchSpans = 8192
	}
	if c.Writers <= 0 {
		c.Writers = 1
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	return c
}

// Validate reports configuration errors, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("trace config: Store is required")
	case c.Ingest == nil:
		return errors.New("trace config: Ingest is required")
	case c.Query == nil:
		return errors.New("trace config: Query is required")
	case c.Authz == nil:
		return errors.New("trace config: Authz is required")
	}
	return nil
}

// Service is the trace service: OTLP and OCSF ingest, the span store's
// writer and retention, and the query API.
type Service struct {
	cfg     Config
	st      store.Store
	log     *slog.Logger
	now     func() time.Time
	writer  *Writer
	metrics *Metrics
	// codec encodes the blocks of an export before it is queued.
	codec      *store.SpanCodec
	closeCodec sync.Once
}

// New builds the service and starts its writers; Close stops them.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	codec, err := store.NewSpanCodec()
	if err != nil {
		return nil, err
	}
	m := NewMetrics()
	return &Service{cfg: cfg, st: cfg.Store, log: cfg.Logger, now: cfg.Now, metrics: m, codec: codec,
		writer: NewWriter(cfg.Store, cfg.QueueSpans, cfg.BatchSpans, cfg.Writers, m, cfg.Logger)}, nil
}

// Metrics returns the service's operational metrics.
func (s *Service) Metrics() *Metrics { return s.metrics }

// Close writes the queued batches and stops the writers.
func (s *Service) Close() {
	s.writer.Close()
	s.closeCodec.Do(s.codec.Close)
}

// NamespaceHeader names the namespace of an ingest request sent with a
// tenant-wide credential; a credential scoped to one namespace may only
// repeat its own.
const NamespaceHeader = "X-Warden-Namespace"

// source resolves the tenant, namespace and agent of an ingest request
// from its credential and authorizes it.
func (s *Service) source(ctx context.Context, p auth.Principal, nsHeader string) (Source, error) {
	ns := p.Namespace
	switch {
	case ns == "" || ns == auth.AllNamespaces:
		ns = nsHeader
		if ns == "" {
			ns = "default"
		}
	case nsHeader != "" && nsHeader != ns:
		return Source{}, apierr.New(apierr.CodeForbidden, "the credential is scoped to namespace %q, not %q", p.Namespace, nsHeader)
	}
	if err := s.cfg.Authz.Authorize(ctx, p, authz.VerbCreate, ns, authz.ObjTraces); err != nil {
		return Source{}, authError(err)
	}
	return Source{Tenant: p.Tenant, Namespace: ns, Agent: p.Agent}, nil
}

// authError maps an authentication or authorization failure.
func authError(err error) error {
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		return apierr.New(apierr.CodeUnauthenticated, "a valid credential is required: send Authorization: Bearer <api key or workload token for audience warden:trace>")
	case errors.Is(err, auth.ErrForbidden):
		return apierr.New(apierr.CodeForbidden, "%s", err.Error())
	}
	return err
}

// exportResult is the outcome of one export.
type exportResult struct {
	rejected int64
	message  string
}

// export stores the request decode converts for the authenticated
// principal's source, waiting until it is written. A request decode
// fails is refused whole (InvalidRequest, nothing stored). Errors are
// *apierr.Error.
func (s *Service) export(ctx context.Context, transport string, p auth.Principal, nsHeader string, decode func(Source) (*converted, error)) (exportResult, error) {
	src, err := s.source(ctx, p, nsHeader)
	if err != nil {
		s.metrics.request(transport, codeOf(err), 0, 0, "")
		return exportResult{}, err
	}
	c, err := decode(src)
	if err != nil {
		s.metrics.request(transport, apierr.CodeInvalidRequest, 0, 0, "")
		return exportResult{}, apierr.New(apierr.CodeInvalidRequest, "%s; nothing was stored", err)
	}
	total := int64(len(c.batch.Spans)) + c.rejected
	if len(c.batch.Spans) > 0 {
		// Encoded here, on the sender's goroutine, rather than by the
		// store's single writer: the blocks of one export are the traces
		// it carries.
		c.batch.Blocks, c.batch.Spans = s.codec.EncodeBlocks(c.batch.Spans), nil
		if err := s.writer.Submit(ctx, src.Tenant, &c.batch, true); err != nil {
			err = s.writeError(err)
			s.metrics.request(transport, codeOf(err), total, 0, "")
			return exportResult{}, err
		}
	}
	s.metrics.request(transport, "OK", total, c.rejected, "invalid")
	return exportResult{rejected: c.rejected, message: c.message()}, nil
}

// writeError maps a writer failure.
func (s *Service) writeError(err error) error {
	switch {
	case errors.Is(err, ErrBusy):
		return apierr.New(apierr.CodeRateLimited, "the trace store is busy: retry after %s", s.cfg.RetryAfter).
			WithDetails(map[string]any{"retryAfterSeconds": int(s.cfg.RetryAfter.Round(time.Second).Seconds())})
	case errors.Is(err, ErrStopped):
		return apierr.New(apierr.CodeUnavailable, "the trace service is stopping")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return apierr.New(apierr.CodeTimeout, "the spans were not written in time; they may still be stored")
	}
	s.log.Error("write spans", "err", err)
	return apierr.New(apierr.CodeUnavailable, "the spans could not be stored; retry")
}

func codeOf(err error) string {
	if e, ok := apierr.As(err); ok {
		return e.Code
	}
	return apierr.CodeInternal
}
