package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// MemoryTx writes the items of the memory service (app/memory). Items are
// plain tenant rows under the tenant's row-level security; they are not
// resources and never appear in the change log, so a write does not queue
// behind the tenant's resource writers.
type MemoryTx interface {
	// MemoryItemInsert stores a new item. ID, Namespace, Memory and Text
	// are required; CreatedAt defaults to the driver's clock.
	// ErrAlreadyExists when the memory holds an item with that id.
	MemoryItemInsert(ctx context.Context, item MemoryItem) (MemoryItem, error)
	// MemoryItemDelete deletes one item of a memory; with a non-empty
	// key.Agent only when the item is that agent's. ErrNotFound when no
	// such item exists.
	MemoryItemDelete(ctx context.Context, key MemoryItemKey) error
	// MemoryItemTrim deletes the memory's items that expired at t.Now and
	// then, when more than t.Keep are left (Keep > 0), the oldest beyond
	// Keep. It returns how many it deleted.
	MemoryItemTrim(ctx context.Context, t MemoryTrim) (deleted int, err error)
	// MemoryItemCompact removes the items c.IDs of a memory after a
	// summary pass: deletes them when c.Delete is set, else marks them as
	// summarized into c.SummaryID (MemoryQuery then leaves them out
	// unless asked). It returns how many items it changed.
	MemoryItemCompact(ctx context.Context, c MemoryCompact) (int, error)
	// MemoryPurge deletes every item of a memory, when the Memory
	// resource is deleted, and returns how many it deleted.
	MemoryPurge(ctx context.Context, namespace, memory string) (deleted int, err error)
}

// MemoryReader reads the memory service's items.
type MemoryReader interface {
	// MemoryItemQuery returns the items of one memory that match q,
	// newest first (then by id, descending), at most q.Limit of them
	// (MaxMemoryQueryLimit when zero). Items expired at q.Now are never
	// returned.
	MemoryItemQuery(ctx context.Context, q MemoryQuery) ([]MemoryItem, error)
}

// MaxMemoryQueryLimit is the most items MemoryItemQuery returns at once.
const MaxMemoryQueryLimit = 100000

// MemoryItem is one stored memory item.
type MemoryItem struct {
	// ID is unique within the memory.
	ID        string
	Namespace string
	// Memory is the Memory resource's name.
	Memory string
	// Agent and Conversation scope the item; empty when the memory does
	// not scope by them.
	Agent        string
	Conversation string
	// Text is the item's text, already redacted.
	Text string
	// Metadata is a JSON object; nil stores {}.
	Metadata map[string]any
	// Summary marks an item written by a summary pass.
	Summary bool
	// SummarizedInto is the id of the summary an item was compacted into;
	// empty while it is live.
	SummarizedInto string
	CreatedAt      time.Time
	// ExpiresAt is nil for an item that never expires.
	ExpiresAt *time.Time
}

// MemoryItemKey names one item; a non-empty Agent restricts it to that
// agent's item.
type MemoryItemKey struct {
	Namespace, Memory, ID, Agent string
}

// MemoryQuery selects items of one memory.
type MemoryQuery struct {
	// Namespace and Memory are required.
	Namespace, Memory string
	// Agent and Conversation, when set, select only items with that value.
	Agent, Conversation string
	// Now excludes items that expired at it; zero means the driver's clock.
	Now time.Time
	// Metadata selects items whose metadata has each key with exactly the
	// given value: a string, a float64 or a bool (JSON scalars).
	Metadata map[string]any
	// Since and Before bound the creation time: Since inclusive, Before
	// exclusive; zero means no bound.
	Since, Before time.Time
	// IncludeSummarized also returns items compacted into a summary.
	IncludeSummarized bool
	// ExcludeSummaries leaves out the summary items themselves.
	ExcludeSummaries bool
	// Limit is the page size; zero means MaxMemoryQueryLimit.
	Limit int
}

// MemoryTrim bounds one memory.
type MemoryTrim struct {
	Namespace, Memory string
	// Now is the expiry time; zero means the driver's clock.
	Now time.Time
	// Keep is the item cap; zero means no cap.
	Keep int
}

// MemoryCompact names the items a summary pass compacted.
type MemoryCompact struct {
	Namespace, Memory string
	IDs               []string
	SummaryID         string
	Delete            bool
}

// metadataKey restricts the keys of metadata filters, which the SQLite
// driver puts into a JSON path.
var metadataKey = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,128}$`)

// ValidMetadataFilterKey reports whether k may be a metadata filter key:
// 1 to 128 letters, digits, '_', '.' or '-'.
func ValidMetadataFilterKey(k string) bool { return metadataKey.MatchString(k) }

// PrepareMemoryItem checks an item and returns it with its times in the
// stored form, CreatedAt defaulted to now, and its metadata encoded.
func PrepareMemoryItem(it MemoryItem, now time.Time) (MemoryItem, []byte, error) {
	switch {
	case it.ID == "":
		return it, nil, errors.New("memory item: id is required")
	case it.Namespace == "" || it.Memory == "":
		return it, nil, fmt.Errorf("memory item %s: namespace and memory are required", it.ID)
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = now
	}
	it.CreatedAt = storedTime(it.CreatedAt)
	it.ExpiresAt = storedTimePtr(it.ExpiresAt)
	if it.Metadata == nil {
		it.Metadata = map[string]any{}
	}
	meta, err := json.Marshal(it.Metadata)
	if err != nil {
		return it, nil, fmt.Errorf("memory item %s: metadata: %w", it.ID, err)
	}
	return it, meta, nil
}

// PrepareMemoryQuery checks q and returns it with Now defaulted, times in
// the stored form, the limit bounded and the metadata filter encoded
// (nil when there is none).
func PrepareMemoryQuery(q MemoryQuery, now time.Time) (MemoryQuery, []byte, error) {
	if q.Namespace == "" || q.Memory == "" {
		return q, nil, errors.New("memory query: namespace and memory are required")
	}
	if q.Now.IsZero() {
		q.Now = now
	}
	q.Now = storedTime(q.Now)
	if !q.Since.IsZero() {
		q.Since = storedTime(q.Since)
	}
	if !q.Before.IsZero() {
		q.Before = storedTime(q.Before)
	}
	if q.Limit <= 0 || q.Limit > MaxMemoryQueryLimit {
		q.Limit = MaxMemoryQueryLimit
	}
	if len(q.Metadata) == 0 {
		return q, nil, nil
	}
	for k, v := range q.Metadata {
		if !ValidMetadataFilterKey(k) {
			return q, nil, fmt.Errorf("memory query: metadata filter key %q must be 1-128 letters, digits, '_', '.' or '-'", k)
		}
		switch v.(type) {
		case string, float64, bool:
		default:
			return q, nil, fmt.Errorf("memory query: metadata filter %q must be a string, number or boolean, got %T", k, v)
		}
	}
	b, err := json.Marshal(q.Metadata)
	if err != nil {
		return q, nil, fmt.Errorf("memory query: metadata filter: %w", err)
	}
	return q, b, nil
}

// PrepareMemoryTrim checks t and returns it with Now defaulted.
func PrepareMemoryTrim(t MemoryTrim, now time.Time) (MemoryTrim, error) {
	if t.Namespace == "" || t.Memory == "" {
		return t, errors.New("memory trim: namespace and memory are required")
	}
	if t.Keep < 0 {
		return t, fmt.Errorf("memory trim: keep must not be negative, got %d", t.Keep)
	}
	if t.Now.IsZero() {
		t.Now = now
	}
	t.Now = storedTime(t.Now)
	return t, nil
}

// MatchesMetadata reports whether meta has every key of filter with an
// equal scalar value. Drivers filter in SQL; this is the reference the
// conformance suite holds them to.
func MatchesMetadata(meta, filter map[string]any) bool {
	for k, want := range filter {
		if got, ok := meta[k]; !ok || got != want {
			return false
		}
	}
	return true
}
