package store

import (
	"context"
	"time"
)

// SpanHistBuckets is the number of latency histogram buckets of a
// SpanRollup; SpanHistBounds are their upper bounds in milliseconds (the
// last bucket is unbounded).
const SpanHistBuckets = 19

// SpanHistBounds are the upper bounds, in milliseconds, of the first
// SpanHistBuckets-1 latency buckets: a 1-2-5 series from 0.1 ms to 60 s.
var SpanHistBounds = [SpanHistBuckets - 1]float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000}

// SpanHistBucket returns the bucket of a latency in milliseconds.
func SpanHistBucket(ms float64) int {
	for i, b := range SpanHistBounds {
		if ms <= b {
			return i
		}
	}
	return SpanHistBuckets - 1
}

// Span status codes, as OTLP numbers them.
const (
	SpanStatusUnset = 0
	SpanStatusOK    = 1
	SpanStatusError = 2
)

// Span is one stored span: the attributes queries filter and aggregate on
// as fields, everything else (attributes, events, links, status message)
// in Data, the OTLP protobuf encoding of the span without the fields the
// others hold. Spans are stored in blocks (SpanBlocks).
type Span struct {
	Namespace string
	TraceID   [16]byte
	SpanID    [8]byte
	// ParentID is all zero for a root span.
	ParentID [8]byte
	Name     string
	Kind     int
	// Start and End are Unix nanoseconds.
	Start, End int64
	Status     int
	// Service, Agent, Tool, Model and Execution are empty when the span
	// does not name them.
	Service, Agent, Tool, Model, Execution string
	Cost                                   float64
	Tokens                                 int64
	// Resource is the id of the span's SpanResource.
	Resource int64
	Data     []byte
}

// SpanResource is the resource and instrumentation scope that a batch of
// spans share, stored once per distinct value: ID is a hash of Data.
type SpanResource struct {
	ID   int64
	Data []byte
}

// Widths of rollup buckets, in seconds.
const (
	RollupMinute int64 = 60
	RollupHour   int64 = 3600
)

// SpanRollup holds the aggregates of the calls (spans naming a tool or a
// model) of one namespace, agent, tool and model in one bucket of Width
// seconds (RollupMinute or RollupHour). Writes add to the stored row.
type SpanRollup struct {
	Namespace, Agent, Tool, Model string
	// Width is the bucket's length in seconds; zero means RollupMinute.
	Width int64
	// Minute is the Unix second the bucket starts at.
	Minute     int64
	Calls      int64
	Errors     int64
	LatencySum float64
	Cost       float64
	Tokens     int64
	Hist       [SpanHistBuckets]int64
}

// Add adds o's aggregates to r.
func (r *SpanRollup) Add(o *SpanRollup) {
	r.Calls += o.Calls
	r.Errors += o.Errors
	r.LatencySum += o.LatencySum
	r.Cost += o.Cost
	r.Tokens += o.Tokens
	for i := range r.Hist {
		r.Hist[i] += o.Hist[i]
	}
}

// OCSFEvent is one stored OCSF event: the fields queries filter on as
// columns, the whole event as JSON in Data.
type OCSFEvent struct {
	Namespace string
	// Time is Unix milliseconds (OCSF's own unit).
	Time       int64
	ClassUID   int
	ActivityID int
	SeverityID int
	StatusID   int
	// Actor is the acting user or service, Operation the API operation.
	Actor, Operation string
	Data             []byte
}

// SpanBatch is what one SpanWrite stores, all or nothing.
type SpanBatch struct {
	// Spans are stored in blocks the store encodes; Blocks were encoded
	// by the caller (SpanCodec.EncodeBlocks), off the write path.
	Spans     []Span
	Blocks    []EncodedBlock
	Resources []SpanResource
	Rollups   []SpanRollup
	Events    []OCSFEvent
}

// SpanCursor is the position after the last span of a page of SpanList.
type SpanCursor struct {
	Start  int64
	SpanID [8]byte
}

// SpanFilter selects spans. Zero fields match everything.
type SpanFilter struct {
	// Namespaces limits the spans to these namespaces; nil means all.
	Namespaces []string
	// TraceIDs limits the spans to these traces.
	TraceIDs [][16]byte
	// Execution, Agent, … must equal the span's columns.
	Execution, Agent, Tool, Model, Service, Name string
	// Not holds values of the same fields that a span must not have.
	NotAgent, NotTool, NotModel, NotService, NotName string
	// Status is one of the SpanStatus codes, or -1 for any.
	Status int
	// Since and Until bound the start time, Unix nanoseconds; zero is
	// unbounded. Since is inclusive, Until exclusive.
	Since, Until int64
	// After continues a list ordered newest first.
	After *SpanCursor
	// Limit caps the spans returned; zero means no cap.
	Limit int
	// Ascending orders by start time oldest first (traces); otherwise newest
	// first (lists).
	Ascending bool
}

// TraceSummary describes one stored trace.
type TraceSummary struct {
	TraceID    [16]byte
	Spans      int
	Errors     int
	Start, End int64
	// Root names the span without a parent (empty when none was stored).
	Root, Service string
}

// RollupFilter selects rollup rows.
type RollupFilter struct {
	// Namespaces limits the rows to these namespaces; nil means all.
	Namespaces []string
	// Since and Until bound the buckets, Unix seconds on whole minutes:
	// Since inclusive, Until exclusive. The whole hours between them are
	// read from hour buckets, the rest from minute buckets.
	Since, Until int64
	// Need names the aggregates to sum ("calls", "errors", "latency",
	// "cost", "tokens", "hist"); the others come back zero. Empty: all.
	Need []string
	// Equal and NotEqual match the dimensions "namespace", "agent",
	// "tool" and "model".
	Equal, NotEqual map[string]string
	// GroupBy lists the dimensions the result is grouped by; every other
	// dimension is summed over. Empty: one row.
	GroupBy []string
	// CallsOnly limits the rows to tool calls (a non-empty tool) or, with
	// ModelsOnly, to model calls (a non-empty model).
	ToolsOnly, ModelsOnly bool
}

// OCSFFilter selects OCSF events, newest first.
type OCSFFilter struct {
	Namespaces   []string
	ClassUID     int
	Since, Until int64
	// Before continues a list: only events with a row id below it.
	Before int64
	Limit  int
}

// StoredOCSFEvent is an OCSFEvent with its row id (the paging cursor).
type StoredOCSFEvent struct {
	ID int64
	OCSFEvent
}

// TraceCutoffs are the times before which a tenant's trace data goes:
// spans (by start time) with the resources no later span uses, call
// rollups (by bucket) and OCSF events. A zero time deletes nothing.
type TraceCutoffs struct {
	Spans, Metrics, OCSFEvents time.Time
}

// TraceStore stores spans, their per-minute call aggregates and OCSF
// events, every row scoped to one tenant.
type TraceStore interface {
	// SpanWrite stores a batch in one transaction: spans (one block per
	// namespace and trace, SpanBlocks), resources (those already stored
	// are kept), rollups (added to the stored rows) and OCSF events.
	// Nothing is stored when it fails.
	SpanWrite(ctx context.Context, tenant string, b *SpanBatch) error
	// SpanList returns the spans matching f, from blocks and from the
	// per-span table of earlier versions alike.
	SpanList(ctx context.Context, tenant string, f SpanFilter) ([]Span, error)
	// SpanResourceGet returns the resources with the given ids.
	SpanResourceGet(ctx context.Context, tenant string, ids []int64) (map[int64][]byte, error)
	// SpanListResources is SpanList and SpanResourceGet of the spans'
	// resources in one read transaction: what a trace read needs.
	SpanListResources(ctx context.Context, tenant string, f SpanFilter) ([]Span, map[int64][]byte, error)
	// TraceSummaryList summarizes the given traces (those of namespaces,
	// nil for all), in no particular order.
	TraceSummaryList(ctx context.Context, tenant string, namespaces []string, ids [][16]byte) ([]TraceSummary, error)
	// SpanRollupList returns the rollups matching f, summed per group.
	SpanRollupList(ctx context.Context, tenant string, f RollupFilter) ([]SpanRollup, error)
	// OCSFEventList returns OCSF events matching f, newest first.
	OCSFEventList(ctx context.Context, tenant string, f OCSFFilter) ([]StoredOCSFEvent, error)
	// SpanExpire deletes, oldest first in one short transaction, at most
	// limit span blocks whose spans all started before cut.Spans (and
	// limit old per-span rows, and unused resources), limit rollups of
	// buckets before cut.Metrics and limit OCSF events before
	// cut.OCSFEvents, and returns the most rows it deleted of any table;
	// callers repeat until it returns fewer than limit.
	SpanExpire(ctx context.Context, tenant string, cut TraceCutoffs, limit int) (int, error)
}

// RollupDimensions are the dimensions of SpanRollup a query may group or
// filter by.
var RollupDimensions = []string{"namespace", "agent", "tool", "model"}

// SpanResourceIDs returns the distinct resource ids of spans, in the
// order they first appear.
func SpanResourceIDs(spans []Span) []int64 {
	var ids []int64
	seen := map[int64]bool{}
	for i := range spans {
		if r := spans[i].Resource; !seen[r] {
			seen[r] = true
			ids = append(ids, r)
		}
	}
	return ids
}
