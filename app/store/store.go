package store

import (
	"context"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
)

// CompactChunk is how many change-log entries one transaction of
// ChangesCompact drops at most: the tenant's other writes wait for one
// chunk, not for the whole compaction.
const CompactChunk = 1000

// UpdateUntilDone runs step in one transaction of tenant after another
// (through update, a Store's Update) until step reports done: long work,
// such as a compaction, goes in short transactions, and the tenant's other
// writes wait for one of them at most.
func UpdateUntilDone(ctx context.Context, update func(context.Context, string, func(context.Context, Tx) error) error,
	tenant string, step func(ctx context.Context, tx Tx) (done bool, err error)) error {
	for {
		done := false
		if err := update(ctx, tenant, func(ctx context.Context, tx Tx) error {
			var err error
			done, err = step(ctx, tx)
			return err
		}); err != nil || done {
			return err
		}
	}
}

// Store is the storage interface of Warden. Every method that touches tenant
// data is scoped to exactly one tenant; a driver must refuse an empty tenant
// with ErrNoTenant. The Postgres driver additionally enforces the scope with
// row-level security.
type Store interface {
	// View runs fn in a read-only transaction scoped to tenant.
	View(ctx context.Context, tenant string, fn func(ctx context.Context, tx Reader) error) error
	// Update runs fn in a read-write transaction scoped to tenant. The
	// transaction commits when fn returns nil and rolls back otherwise, so a
	// multi-document apply is all or nothing.
	Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx Tx) error) error

	// ChangesSince returns change-log entries of tenant with a resource
	// version greater than after, oldest first, at most limit of them. It
	// answers ErrGone when after is older than the retained history.
	ChangesSince(ctx context.Context, tenant string, after int64, limit int) ([]Change, error)
	// ChangesCompact drops change-log entries of tenant older than keep
	// entries behind the newest, moving the retained-history floor, in
	// transactions of at most CompactChunk entries.
	ChangesCompact(ctx context.Context, tenant string, keep int) error
	// Listen calls fn, without blocking the writer, after every commit that
	// appended to a tenant's change log, on this process or (for shared
	// backends) on any replica. The returned function stops the calls.
	Listen(fn func(tenant string)) (stop func())
	// ListenConfig is Listen restricted to commits that wrote a
	// configuration resource, i.e. any kind but the runtime records
	// (resource.IsRecordKind): caches of tools, agents and policies use it
	// so that the gateway's own ToolCall writes do not invalidate them.
	ListenConfig(fn func(tenant string)) (stop func())
	// ConfigGeneration counts the commits that wrote a configuration kind
	// of tenant, as ListenConfig signals them; it moves before the commit
	// returns (on Postgres, for another replica's commit, when its
	// notification arrives). A cache compares it on every read, so a call
	// made after an apply answered sees that apply on this replica.
	ConfigGeneration(tenant string) uint64

	// APIKeyLookup finds an API key by the SHA-256 hex of its secret, across
	// tenants. It is the only cross-tenant read and returns ErrNotFound for
	// unknown or revoked keys.
	APIKeyLookup(ctx context.Context, secretHash string) (*APIKey, error)

	// CallWriter writes the tool gateway's records in batches.
	CallWriter

	// IdentityStore holds the tenant directory, sessions, memberships by
	// e-mail, API key usage and the signing keys.
	IdentityStore

	// TraceStore holds spans, their call aggregates and OCSF events.
	TraceStore

	// Close releases the driver's resources.
	Close() error
}

// Reader is the read side of a transaction bound to one tenant.
type Reader interface {
	// ResourceGet returns one resource or ErrNotFound.
	ResourceGet(ctx context.Context, key resource.Key) (*resource.Object, error)
	// ResourceList returns one page of resources matching params.
	ResourceList(ctx context.Context, params ListParams) (*ListResult, error)
	// EventList returns persisted events with a sequence greater than after.
	EventList(ctx context.Context, after int64, limit int) ([]events.Event, error)
	// AuditList returns audit records in chain order, filtered.
	AuditList(ctx context.Context, params AuditListParams) ([]audit.Record, error)
	// CurrentVersion returns the tenant's newest resource version.
	CurrentVersion(ctx context.Context) (int64, error)
	// AuditHead returns the sequence number of the newest audit record the
	// tenant ever appended, read from the tenant's counter row rather than
	// from the log, so that removing the newest records can be detected; 0
	// when the tenant has none.
	AuditHead(ctx context.Context) (int64, error)
	// MemberReader reads the tenant's members and API keys.
	MemberReader
	// GatewayReader reads the tool gateway's usage counters.
	GatewayReader
	// RAGReader reads the RAG service's documents and chunks.
	RAGReader
	// RouterReader reads the model router's routing decisions.
	RouterReader
	// RetentionReader reads the oldest records and the audit checkpoint.
	RetentionReader
	// MemoryReader reads the memory service's items.
	MemoryReader
}

// Tx is a read-write transaction bound to one tenant.
type Tx interface {
	Reader
	// ResourceCreate stores a new resource. The driver sets uid,
	// resourceVersion, generation 1 and creationTimestamp, appends an ADDED
	// change and returns the stored object. ErrAlreadyExists if it exists.
	ResourceCreate(ctx context.Context, obj *resource.Object) (*resource.Object, error)
	// ResourceUpdate replaces spec, labels and annotations of an existing
	// resource, keeping its status. A non-empty obj.Metadata.ResourceVersion
	// is a precondition (ErrConflict when stale). Generation moves by one
	// only when the spec changes; an update that changes nothing returns the
	// stored object without a new version or change entry.
	ResourceUpdate(ctx context.Context, obj *resource.Object) (*resource.Object, error)
	// ResourceUpdateStatus replaces the status subresource only. A non-empty
	// resourceVersion is a precondition.
	ResourceUpdateStatus(ctx context.Context, key resource.Key, status map[string]any, resourceVersion string) (*resource.Object, error)
	// ResourceDelete removes a resource, appending a DELETED change that
	// carries its last state. A non-empty resourceVersion is a precondition.
	ResourceDelete(ctx context.Context, key resource.Key, resourceVersion string) (*resource.Object, error)
	// EventInsert appends an internal event to the persisted event log.
	EventInsert(ctx context.Context, ev events.Event) (events.Event, error)
	// AuditInsert appends a record to the tenant's hash-chained audit log,
	// filling Seq, PrevHash and Hash.
	AuditInsert(ctx context.Context, rec audit.Record) (audit.Record, error)
	// APIKeyInsert stores an API key (only its hash). Names are unique
	// within a tenant, revoked keys included (audit records and RoleBindings
	// name keys by name): ErrAlreadyExists when the name or id is taken.
	APIKeyInsert(ctx context.Context, key APIKey) error
	// MemberTx manages the tenant's members and revokes its API keys.
	MemberTx
	// GatewayTx holds idempotency claims and usage counters.
	GatewayTx
	// RAGTx writes the RAG service's documents and chunks.
	RAGTx
	// RouterTx records the model router's routing decisions.
	RouterTx
	// RetentionTx deletes what the tenant's retention policy lets go.
	RetentionTx
	// MemoryTx writes the memory service's items.
	MemoryTx
}

// ListParams selects one page of a list.
type ListParams struct {
	// Kind is required.
	Kind string
	// Namespace limits the list to one namespace; empty lists all.
	Namespace string
	// Selector filters by labels and fields; nil matches everything.
	Selector *resource.Selector
	// Limit is the page size; the driver caps it at MaxPageSize and uses
	// DefaultPageSize when zero.
	Limit int
	// Continue is the opaque token of the previous page.
	Continue string
}

// Page sizes of lists.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ListResult is one page.
type ListResult struct {
	Items []*resource.Object
	// Continue is empty on the last page.
	Continue string
	// ResourceVersion is the tenant's version at the time of the read.
	ResourceVersion string
}

// Change types of the change log and the watch stream.
const (
	ChangeAdded    = "ADDED"
	ChangeModified = "MODIFIED"
	ChangeDeleted  = "DELETED"
)

// Change is one change-log entry.
type Change struct {
	ResourceVersion int64
	Type            string
	Object          *resource.Object
}

// AuditListParams filters an audit listing.
type AuditListParams struct {
	After int64
	// Before, when positive, keeps only records with a smaller sequence
	// number (paging backwards through a newest-first listing).
	Before int64
	// NewestFirst lists in descending sequence order instead of chain order.
	NewestFirst bool
	Limit       int
	Actor       string
	Namespace   string
	Verb        string
	Since       time.Time
}

// APIKey is a stored API key. The secret itself is never stored.
type APIKey struct {
	ID         string
	Tenant     string
	Name       string
	SecretHash string
	// Namespace scopes the key; "*" means every namespace of the tenant.
	Namespace string
	Role      string
	// Agent binds the key to one agent (workload keys); empty otherwise.
	Agent     string
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
	// LastUsedAt is when the key was last used, as recorded by APIKeyTouch
	// (callers throttle it, so it may lag); nil when never recorded.
	LastUsedAt *time.Time
}
