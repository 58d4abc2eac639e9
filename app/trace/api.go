package trace

import (
	"encoding/base64"
	"encoding/hex"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/warden-dev/warden/app/store"
)

// Wire types of the query API, shared by the server and the CLI.

// SpanStatus is a span's status.
type SpanStatus struct {
	// Code is "unset", "ok" or "error".
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// SpanEvent is an event on a span.
type SpanEvent struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// SpanLink links a span to another.
type SpanLink struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Scope is a span's instrumentation scope.
type Scope struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// SpanView is one span as the query API returns it.
type SpanView struct {
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId,omitempty"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	StartTime    time.Time      `json:"startTime"`
	EndTime      time.Time      `json:"endTime"`
	DurationMs   float64        `json:"durationMs"`
	Status       SpanStatus     `json:"status"`
	Namespace    string         `json:"namespace"`
	Service      string         `json:"service,omitempty"`
	Agent        string         `json:"agent,omitempty"`
	Tool         string         `json:"tool,omitempty"`
	Model        string         `json:"model,omitempty"`
	Execution    string         `json:"execution,omitempty"`
	Cost         float64        `json:"cost,omitempty"`
	Tokens       int64          `json:"tokens,omitempty"`
	Attributes   map[string]any `json:"attributes,omitempty"`
	Events       []SpanEvent    `json:"events,omitempty"`
	Links        []SpanLink     `json:"links,omitempty"`
	Resource     map[string]any `json:"resource,omitempty"`
	Scope        *Scope         `json:"scope,omitempty"`
}

// Trace is the answer of GET /v1/traces/{id}: every span, oldest first.
type Trace struct {
	TraceID string     `json:"traceId"`
	Spans   []SpanView `json:"spans"`
	// Truncated is set when the trace has more spans than one answer
	// carries (MaxTraceSpans).
	Truncated bool `json:"truncated,omitempty"`
}

// TraceSummary is one item of GET /v1/traces.
type TraceSummary struct {
	TraceID    string    `json:"traceId"`
	Root       string    `json:"root,omitempty"`
	Service    string    `json:"service,omitempty"`
	StartTime  time.Time `json:"startTime"`
	DurationMs float64   `json:"durationMs"`
	Spans      int       `json:"spans"`
	Errors     int       `json:"errors"`
}

// ListMeta is the metadata of a list answer.
type ListMeta struct {
	Continue string `json:"continue,omitempty"`
}

// TraceList is the answer of GET /v1/traces.
type TraceList struct {
	Kind     string         `json:"kind"`
	Metadata ListMeta       `json:"metadata"`
	Items    []TraceSummary `json:"items"`
}

// SpanList is the answer of GET /v1/spans.
type SpanList struct {
	Kind     string     `json:"kind"`
	Metadata ListMeta   `json:"metadata"`
	Items    []SpanView `json:"items"`
}

// MetricResult is the answer of GET /v1/metrics.
type MetricResult struct {
	Query      string    `json:"query"`
	ResultType string    `json:"resultType"`
	Unit       string    `json:"unit"`
	Time       time.Time `json:"time"`
	Window     string    `json:"window"`
	Result     []Sample  `json:"result"`
}

// OCSFEventView is one item of GET /v1/ocsf.
type OCSFEventView struct {
	Namespace string         `json:"namespace"`
	Time      time.Time      `json:"time"`
	ClassUID  int            `json:"classUid"`
	Event     map[string]any `json:"event"`
}

// OCSFEventList is the answer of GET /v1/ocsf.
type OCSFEventList struct {
	Kind     string          `json:"kind"`
	Metadata ListMeta        `json:"metadata"`
	Items    []OCSFEventView `json:"items"`
}

var kindNames = map[tracepb.Span_SpanKind]string{
	tracepb.Span_SPAN_KIND_UNSPECIFIED: "unspecified", tracepb.Span_SPAN_KIND_INTERNAL: "internal", tracepb.Span_SPAN_KIND_SERVER: "server",
	tracepb.Span_SPAN_KIND_CLIENT: "client", tracepb.Span_SPAN_KIND_PRODUCER: "producer", tracepb.Span_SPAN_KIND_CONSUMER: "consumer",
}

var statusNames = map[int]string{store.SpanStatusUnset: "unset", store.SpanStatusOK: "ok", store.SpanStatusError: "error"}

// view builds the API form of a stored span and its rebuilt OTLP form;
// res is the span's resource and scope (nil when unknown).
func view(row *store.Span, sp *tracepb.Span, res *tracepb.ResourceSpans) SpanView {
	v := SpanView{
		TraceID: hex.EncodeToString(row.TraceID[:]), SpanID: hex.EncodeToString(row.SpanID[:]),
		Name: row.Name, Kind: kindNames[tracepb.Span_SpanKind(row.Kind)],
		StartTime: time.Unix(0, row.Start).UTC(), EndTime: time.Unix(0, row.End).UTC(),
		DurationMs: float64(row.End-row.Start) / 1e6,
		Status:     SpanStatus{Code: statusNames[row.Status], Message: sp.GetStatus().GetMessage()},
		Namespace:  row.Namespace, Service: row.Service, Agent: row.Agent, Tool: row.Tool, Model: row.Model, Execution: row.Execution,
		Cost: row.Cost, Tokens: row.Tokens, Attributes: attrMap(sp.GetAttributes()),
	}
	if row.ParentID != ([8]byte{}) {
		v.ParentSpanID = hex.EncodeToString(row.ParentID[:])
	}
	for _, e := range sp.GetEvents() {
		v.Events = append(v.Events, SpanEvent{Name: e.GetName(), Time: time.Unix(0, int64(e.GetTimeUnixNano())).UTC(), Attributes: attrMap(e.GetAttributes())})
	}
	for _, l := range sp.GetLinks() {
		v.Links = append(v.Links, SpanLink{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId()), Attributes: attrMap(l.GetAttributes())})
	}
	if res != nil {
		v.Resource = attrMap(res.GetResource().GetAttributes())
		if ss := res.GetScopeSpans(); len(ss) > 0 && ss[0].GetScope() != nil {
			v.Scope = &Scope{Name: ss[0].GetScope().GetName(), Version: ss[0].GetScope().GetVersion()}
		}
	}
	return v
}

// attrMap renders attributes as a JSON object.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyJSON(kv.GetValue(), 0)
	}
	return m
}

func anyJSON(v *commonpb.AnyValue, depth int) any {
	if depth > 16 {
		return nil
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyJSON(e, depth+1))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = anyJSON(kv.GetValue(), depth+1)
		}
		return out
	}
	return nil
}
