package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/jobs"
)

// Queue runs index refreshes as durable jobs (jobs.RAG).
type Queue interface {
	EnqueueRAGRefresh(ctx context.Context, tenant, namespace, index string) (jobs.RAGJob, error)
}

// Config configures a Service.
type Config struct {
	// Store holds the resources and the index rows.
	Store store.Store
	// Authn verifies credentials (workload tokens of audience warden:rag,
	// API keys); Authz decides every request. Both are needed by App.
	Authn *auth.Authenticator
	Authz *authz.Authorizer
	// Queue runs refreshes; nil runs them in the background of this
	// process (tests, and a process without a job queue).
	Queue Queue
	// Bus receives KnowledgeRetrieved after it is committed; nil: none.
	Bus *events.Bus
	// Fetcher reads knowledge sources.
	Fetcher Fetcher
	// Embedder, when set, embeds the chunks and queries of indexes that
	// name an embedding model; nil ranks every index with BM25.
	Embedder *Embedder
	// Timeouts of the listener (zero fields: listener's defaults).
	Timeouts listener.Timeouts
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int
	Logger       *slog.Logger
	Now          func() time.Time
}

// WithDefaults returns c with its empty fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Fetcher.HTTP == nil {
		c.Fetcher.HTTP = NewHTTPClient(false)
	}
	return c
}

// Validate reports a missing dependency by field name.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("rag: Config.Store is required")
	}
	return nil
}

// Service refreshes and queries RAG indexes.
type Service struct {
	cfg Config
	log *slog.Logger
	// bg bounds the in-process refreshes when there is no Queue.
	bg chan struct{}
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, log: cfg.Logger, bg: make(chan struct{}, 2)}, nil
}

// RefreshJob is the work of the refresh job (jobs.RAGRefresher): a
// RAGIndex deleted since the job was queued is not an error.
func (s *Service) RefreshJob(ctx context.Context, tenant, namespace, index string) error {
	res, err := s.Refresh(ctx, tenant, namespace, index)
	if errors.Is(err, ErrNotFound) {
		s.log.InfoContext(ctx, "RAG refresh of an index that is gone", "tenant", tenant, "namespace", namespace, "index", index)
		return nil
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "RAG index refreshed", "tenant", tenant, "namespace", namespace, "index", index,
		"documentsAdded", res.Documents.Added, "documentsUpdated", res.Documents.Updated,
		"documentsDeleted", res.Documents.Deleted, "chunksAdded", res.Chunks.Added, "chunksDeleted", res.Chunks.Deleted)
	return nil
}

// Enqueued is the answer to an index request.
type Enqueued struct {
	Index     string `json:"index"`
	Namespace string `json:"namespace"`
	// Job is River's job id; 0 when the refresh runs in-process.
	Job int64 `json:"job,omitempty"`
	// Status is queued, running, or already-queued.
	Status string `json:"status"`
}

// Enqueue schedules a refresh of an index after checking that it exists.
func (s *Service) Enqueue(ctx context.Context, tenant, namespace, index string) (*Enqueued, error) {
	if err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		_, err := getIndex(ctx, r, namespace, index)
		return err
	}); err != nil {
		return nil, err
	}
	out := &Enqueued{Index: index, Namespace: namespace, Status: "queued"}
	if s.cfg.Queue == nil {
		select {
		case s.bg <- struct{}{}:
		default:
			return nil, fmt.Errorf("%w: too many refreshes running in this process; try again later", errBusy)
		}
		go func() {
			defer func() { <-s.bg }()
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
			defer cancel()
			if err := s.RefreshJob(bctx, tenant, namespace, index); err != nil {
				s.log.ErrorContext(bctx, "RAG refresh", "tenant", tenant, "namespace", namespace, "index", index, "err", err)
			}
		}()
		return out, nil
	}
	job, err := s.cfg.Queue.EnqueueRAGRefresh(ctx, tenant, namespace, index)
	if err != nil {
		return nil, fmt.Errorf("rag: enqueue the refresh of %s: %w", index, err)
	}
	out.Job = job.ID
	switch {
	case job.State == "running":
		out.Status = "running"
	case job.Duplicate:
		out.Status = "already-queued"
	}
	return out, nil
}

var errBusy = errors.New("rag: busy")

// SourceStatus is the answer of GET /v1/rag/sources/{id}/status.
type SourceStatus struct {
	Name      string                         `json:"name"`
	Namespace string                         `json:"namespace"`
	Type      string                         `json:"type"`
	Status    resource.KnowledgeSourceStatus `json:"status"`
}

// Status returns the sync status of a knowledge source, as the last
// refresh of an index that reads it wrote it.
func (s *Service) Status(ctx context.Context, tenant, namespace, name string) (*SourceStatus, error) {
	var out *SourceStatus
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindKnowledgeSource, Namespace: namespace, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: knowledge source %q not found in namespace %q", ErrNotFound, name, namespace)
		}
		if err != nil {
			return fmt.Errorf("rag: read knowledge source %s: %w", name, err)
		}
		spec, err := resource.DecodeSpec[resource.KnowledgeSourceSpec](obj)
		if err != nil {
			return fmt.Errorf("rag: knowledge source %s: %w", name, err)
		}
		out = &SourceStatus{Name: name, Namespace: namespace, Type: spec.Type}
		if len(obj.Status) > 0 {
			enc, err := resource.MarshalValue(obj.Status)
			if err == nil {
				err = json.Unmarshal(enc, &out.Status)
			}
			if err != nil {
				return fmt.Errorf("rag: knowledge source %s status: %w", name, err)
			}
		}
		if out.Status.Phase == "" {
			out.Status.Phase = "Pending"
		}
		return nil
	})
	return out, err
}

// getIndex reads a RAGIndex's spec.
func getIndex(ctx context.Context, r store.Reader, namespace, name string) (resource.RAGIndexSpec, error) {
	spec, _, err := getIndexObject(ctx, r, namespace, name)
	return spec, err
}

// getIndexObject is getIndex that also returns the index's uid, which
// tells it from an index of the same name created after it was deleted.
func getIndexObject(ctx context.Context, r store.Reader, namespace, name string) (resource.RAGIndexSpec, string, error) {
	obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindRAGIndex, Namespace: namespace, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return resource.RAGIndexSpec{}, "", fmt.Errorf("%w: RAG index %q not found in namespace %q", ErrNotFound, name, namespace)
	}
	if err != nil {
		return resource.RAGIndexSpec{}, "", fmt.Errorf("rag: read RAG index %s: %w", name, err)
	}
	spec, err := resource.DecodeSpec[resource.RAGIndexSpec](obj)
	if err != nil {
		return spec, "", fmt.Errorf("rag: RAG index %s: %w", name, err)
	}
	return spec, obj.Metadata.UID, nil
}

// checkIndex fails with ErrIndexGone, inside a write transaction, when the
// index of uid is no longer there: deleted (its rows purged in the
// deleting transaction) or replaced by one of the same name. Call it
// after the transaction's first RAG write: on PostgreSQL that write takes
// the tenant's lock, which a delete holds until it commits, so this read
// sees a delete that committed before it.
func checkIndex(ctx context.Context, tx store.Tx, namespace, name, uid string) error {
	obj, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindRAGIndex, Namespace: namespace, Name: name})
	if errors.Is(err, store.ErrNotFound) || (err == nil && obj.Metadata.UID != uid) {
		return fmt.Errorf("%w: RAG index %q of namespace %q was deleted during the refresh", ErrIndexGone, name, namespace)
	}
	if err != nil {
		return fmt.Errorf("rag: read RAG index %s: %w", name, err)
	}
	return nil
}

// chunking returns an index's chunk size and overlap.
func chunking(spec resource.RAGIndexSpec) (size, overlap int) {
	size, overlap = DefaultChunkSize, DefaultChunkOverlap
	if c := spec.Chunking; c != nil {
		if c.Size > 0 {
			size = int(c.Size)
		}
		if c.Overlap > 0 || c.Size > 0 {
			overlap = int(c.Overlap)
		}
	}
	if size > MaxChunkSize {
		size = MaxChunkSize
	}
	if overlap >= size {
		overlap = size / 8
	}
	return size, overlap
}

// embeddingModel returns the model an index's chunks are embedded with,
// "" when the index or the service has none.
func (s *Service) embeddingModel(spec resource.RAGIndexSpec) string {
	if s.cfg.Embedder == nil || spec.Embedding == nil {
		return ""
	}
	return spec.Embedding.ModelRef
}
