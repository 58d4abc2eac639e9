package trace

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/store"
)

// Limits bound what one span may carry. A span over a limit is rejected
// whole (reported in the partial-success answer), never stored truncated.
type Limits struct {
	// MaxAttributes caps a span's attributes (and those of each event and
	// link); default 256.
	MaxAttributes int
	// MaxEvents caps a span's events; default 512.
	MaxEvents int
	// MaxLinks caps a span's links; default 128.
	MaxLinks int
	// MaxValueBytes caps one attribute's string or bytes value; default 64 KiB.
	MaxValueBytes int
	// MaxNameBytes caps a span's name; default 1 KiB.
	MaxNameBytes int
}

// WithDefaults returns l with zero fields replaced by their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxAttributes <= 0 {
		l.MaxAttributes = 256
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = 512
	}
	if l.MaxLinks <= 0 {
		l.MaxLinks = 128
	}
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = 64 << 10
	}
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = 1 << 10
	}
	return l
}

// Source is who sent a batch: the tenant and namespace its spans are
// stored under, and the agent its credential names (empty for a person or
// an API key not bound to an agent). It comes from the credential, never
// from the spans.
type Source struct {
	Tenant, Namespace, Agent string
}

// Attribute keys the columns are read from, in order of preference. Span
// attributes win over resource attributes.
var (
	keysAgent     = []string{"warden.agent", "gen_ai.agent.name"}
	keysTool      = []string{"warden.tool", "gen_ai.tool.name"}
	keysModel     = []string{"warden.model", "gen_ai.response.model", "gen_ai.request.model"}
	keysExecution = []string{"warden.execution", "gen_ai.conversation.id"}
	keysCost      = []string{"warden.cost", "gen_ai.usage.cost"}
	keysTokensIn  = []string{"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"}
	keysTokensOut = []string{"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"}
)

// converted is one request turned into rows.
type converted struct {
	batch    store.SpanBatch
	rejected int64
	// reasons holds the first few rejection messages.
	reasons []string
}

func (c *converted) reject(msg string) {
	c.rejected++
	if len(c.reasons) < 3 {
		c.reasons = append(c.reasons, msg)
	}
}

// message is the partial-success error message.
func (c *converted) message() string {
	if c.rejected == 0 {
		return ""
	}
	m := fmt.Sprintf("%d spans rejected: %s", c.rejected, strings.Join(c.reasons, "; "))
	if c.rejected > int64(len(c.reasons)) {
		m += "; …"
	}
	return m
}

// convert turns an export request into rows for src. Invalid spans are
// rejected one by one; the rest are stored.
func convert(req *collectortrace.ExportTraceServiceRequest, src Source, lim Limits) *converted {
	return convertResourceSpans(req.GetResourceSpans(), src, lim)
}

// convertResourceSpans is convert over the request's resource spans.
func convertResourceSpans(rss []*tracepb.ResourceSpans, src Source, lim Limits) *converted {
	out := &converted{}
	resources := map[int64]bool{}
	rollups := newRollupSet()
	for _, rs := range rss {
		res := rs.GetResource()
		resAttrs := res.GetAttributes()
		service := stringAttr(resAttrs, "service.name")
		resAgent := firstString(resAttrs, keysAgent)
		resExec := firstString(resAttrs, keysExecution)
		if len(resAttrs) > lim.MaxAttributes {
			for _, ss := range rs.GetScopeSpans() {
				for range ss.GetSpans() {
					out.reject(fmt.Sprintf("the resource has %d attributes, more than the limit of %d", len(resAttrs), lim.MaxAttributes))
				}
			}
			continue
		}
		for _, ss := range rs.GetScopeSpans() {
			if len(ss.GetSpans()) == 0 {
				continue
			}
			rid, rdata := resourceOf(rs, ss)
			used := false
			for _, sp := range ss.GetSpans() {
				if msg := checkSpan(sp, lim); msg != "" {
					out.reject(msg)
					continue
				}
				row := spanRow(sp, src, service, resAgent, resExec, rid)
				out.batch.Spans = append(out.batch.Spans, row)
				rollups.add(&row)
				used = true
			}
			if used && !resources[rid] {
				resources[rid] = true
				out.batch.Resources = append(out.batch.Resources, store.SpanResource{ID: rid, Data: rdata})
			}
		}
	}
	out.batch.Rollups = rollups.rows()
	return out
}

// resourceOf returns the id and encoding of a resource and scope: the
// ResourceSpans without spans, one ScopeSpans without spans.
func resourceOf(rs *tracepb.ResourceSpans, ss *tracepb.ScopeSpans) (int64, []byte) {
	m := &tracepb.ResourceSpans{Resource: rs.GetResource(), SchemaUrl: rs.GetSchemaUrl(),
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.GetScope(), SchemaUrl: ss.GetSchemaUrl()}}}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return int64(h.Sum64() >> 1), b
}

// checkSpan returns why sp cannot be stored, or "".
func checkSpan(sp *tracepb.Span, lim Limits) string {
	id := fmt.Sprintf("span %x", sp.GetSpanId())
	switch {
	case len(sp.GetTraceId()) != 16 || allZero(sp.GetTraceId()):
		return id + ": trace_id must be 16 bytes, not all zero"
	case len(sp.GetSpanId()) != 8 || allZero(sp.GetSpanId()):
		return fmt.Sprintf("a span of trace %x: span_id must be 8 bytes, not all zero", sp.GetTraceId())
	case len(sp.GetParentSpanId()) != 0 && len(sp.GetParentSpanId()) != 8:
		return id + ": parent_span_id must be empty or 8 bytes"
	case sp.GetName() == "":
		return id + ": the name is empty"
	case len(sp.GetName()) > lim.MaxNameBytes:
		return fmt.Sprintf("%s: the name is longer than %d bytes", id, lim.MaxNameBytes)
	case sp.GetStartTimeUnixNano() == 0 || sp.GetStartTimeUnixNano() > 1<<62:
		return id + ": start_time_unix_nano is missing or out of range"
	case sp.GetEndTimeUnixNano() < sp.GetStartTimeUnixNano() || sp.GetEndTimeUnixNano() > 1<<62:
		return id + ": end_time_unix_nano is before the start"
	case len(sp.GetAttributes()) > lim.MaxAttributes:
		return fmt.Sprintf("%s: %d attributes, more than the limit of %d", id, len(sp.GetAttributes()), lim.MaxAttributes)
	case len(sp.GetEvents()) > lim.MaxEvents:
		return fmt.Sprintf("%s: %d events, more than the limit of %d", id, len(sp.GetEvents()), lim.MaxEvents)
	case len(sp.GetLinks()) > lim.MaxLinks:
		return fmt.Sprintf("%s: %d links, more than the limit of %d", id, len(sp.GetLinks()), lim.MaxLinks)
	}
	if k := oversized(sp.GetAttributes(), lim); k != "" {
		return fmt.Sprintf("%s: attribute %q is longer than %d bytes", id, k, lim.MaxValueBytes)
	}
	for _, e := range sp.GetEvents() {
		if len(e.GetAttributes()) > lim.MaxAttributes {
			return fmt.Sprintf("%s: event %q has %d attributes, more than the limit of %d", id, e.GetName(), len(e.GetAttributes()), lim.MaxAttributes)
		}
		if k := oversized(e.GetAttributes(), lim); k != "" {
			return fmt.Sprintf("%s: attribute %q of event %q is longer than %d bytes", id, k, e.GetName(), lim.MaxValueBytes)
		}
	}
	for _, l := range sp.GetLinks() {
		if len(l.GetAttributes()) > lim.MaxAttributes {
			return fmt.Sprintf("%s: a link has %d attributes, more than the limit of %d", id, len(l.GetAttributes()), lim.MaxAttributes)
		}
	}
	return ""
}

// oversized returns the key of an attribute over the value limit, or "".
func oversized(kvs []*commonpb.KeyValue, lim Limits) string {
	for _, kv := range kvs {
		if valueSize(kv.GetValue(), 0) > lim.MaxValueBytes {
			return kv.GetKey()
		}
	}
	return ""
}

// valueSize is the size of a value's strings and bytes; nesting past 8
// levels counts as too large.
func valueSize(v *commonpb.AnyValue, depth int) int {
	if depth > 8 {
		return 1 << 30
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return len(x.StringValue)
	case *commonpb.AnyValue_BytesValue:
		return len(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		n := 0
		for _, e := range x.ArrayValue.GetValues() {
			n += valueSize(e, depth+1) + 1
		}
		return n
	case *commonpb.AnyValue_KvlistValue:
		n := 0
		for _, kv := range x.KvlistValue.GetValues() {
			n += len(kv.GetKey()) + valueSize(kv.GetValue(), depth+1)
		}
		return n
	}
	return 8
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// spanRow builds the stored row of a valid span.
func spanRow(sp *tracepb.Span, src Source, service, resAgent, resExec string, rid int64) store.Span {
	attrs := sp.GetAttributes()
	row := store.Span{
		Namespace: src.Namespace,
		Name:      sp.GetName(),
		Kind:      int(sp.GetKind()),
		Start:     int64(sp.GetStartTimeUnixNano()),
		End:       int64(sp.GetEndTimeUnixNano()),
		Status:    int(sp.GetStatus().GetCode()),
		Service:   service,
		Tool:      firstString(attrs, keysTool),
		Model:     firstString(attrs, keysModel),
		Execution: firstString(attrs, keysExecution),
		Cost:      firstFloat(attrs, keysCost),
		Tokens:    firstInt(attrs, keysTokensIn) + firstInt(attrs, keysTokensOut),
		Resource:  rid,
	}
	if row.Tokens == 0 {
		row.Tokens = intAttr(attrs, "gen_ai.usage.total_tokens")
	}
	copy(row.TraceID[:], sp.GetTraceId())
	copy(row.SpanID[:], sp.GetSpanId())
	copy(row.ParentID[:], sp.GetParentSpanId())
	// The credential's agent is authoritative; spans of a person's or a
	// tenant key's exporter name their own.
	switch {
	case src.Agent != "":
		row.Agent = src.Agent
	default:
		row.Agent = firstString(attrs, keysAgent)
		if row.Agent == "" {
			row.Agent = resAgent
		}
	}
	if row.Execution == "" {
		row.Execution = resExec
	}
	row.Data = spanData(sp)
	return row
}

// spanData encodes what the columns do not hold.
func spanData(sp *tracepb.Span) []byte {
	rest := &tracepb.Span{
		TraceState:             sp.GetTraceState(),
		Flags:                  sp.GetFlags(),
		Attributes:             sp.GetAttributes(),
		DroppedAttributesCount: sp.GetDroppedAttributesCount(),
		Events:                 sp.GetEvents(),
		DroppedEventsCount:     sp.GetDroppedEventsCount(),
		Links:                  sp.GetLinks(),
		DroppedLinksCount:      sp.GetDroppedLinksCount(),
	}
	if m := sp.GetStatus().GetMessage(); m != "" {
		rest.Status = &tracepb.Status{Message: m}
	}
	b, _ := proto.Marshal(rest)
	return b
}

// rebuild turns a stored row back into the OTLP span.
func rebuild(row *store.Span) (*tracepb.Span, error) {
	sp := &tracepb.Span{}
	if err := proto.Unmarshal(row.Data, sp); err != nil {
		return nil, fmt.Errorf("decode stored span %x: %w", row.SpanID, err)
	}
	sp.TraceId = append([]byte(nil), row.TraceID[:]...)
	sp.SpanId = append([]byte(nil), row.SpanID[:]...)
	if row.ParentID != ([8]byte{}) {
		sp.ParentSpanId = append([]byte(nil), row.ParentID[:]...)
	}
	sp.Name = row.Name
	sp.Kind = tracepb.Span_SpanKind(row.Kind)
	sp.StartTimeUnixNano, sp.EndTimeUnixNano = uint64(row.Start), uint64(row.End)
	if row.Status != 0 || sp.Status != nil {
		if sp.Status == nil {
			sp.Status = &tracepb.Status{}
		}
		sp.Status.Code = tracepb.Status_StatusCode(row.Status)
	}
	return sp, nil
}

func stringAttr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func firstString(kvs []*commonpb.KeyValue, keys []string) string {
	for _, k := range keys {
		if v := stringAttr(kvs, k); v != "" {
			return v
		}
	}
	return ""
}

func intAttr(kvs []*commonpb.KeyValue, key string) int64 {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			switch v := kv.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_IntValue:
				return v.IntValue
			case *commonpb.AnyValue_DoubleValue:
				return int64(v.DoubleValue)
			}
		}
	}
	return 0
}

func firstInt(kvs []*commonpb.KeyValue, keys []string) int64 {
	for _, k := range keys {
		if v := intAttr(kvs, k); v != 0 {
			return v
		}
	}
	return 0
}

func firstFloat(kvs []*commonpb.KeyValue, keys []string) float64 {
	for _, k := range keys {
		for _, kv := range kvs {
			if kv.GetKey() != k {
				continue
			}
			switch v := kv.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_DoubleValue:
				return v.DoubleValue
			case *commonpb.AnyValue_IntValue:
				return float64(v.IntValue)
			}
		}
	}
	return 0
}

// rollupKey is the identity of a rollup row.
type rollupKey struct {
	ns, agent, tool, model string
	width, minute          int64
}

// rollupSet aggregates calls into rollup rows.
type rollupSet struct {
	m map[rollupKey]*store.SpanRollup
}

func newRollupSet() *rollupSet { return &rollupSet{m: map[rollupKey]*store.SpanRollup{}} }

// add counts row when it is a call: a span naming a tool or a model. Of
// Warden's own spans only warden.toolcall counts, once per call (its
// warden.toolcall.result and .resume spans name the tool too).
func (s *rollupSet) add(row *store.Span) {
	if row.Tool == "" && row.Model == "" {
		return
	}
	if strings.HasPrefix(row.Name, "warden.") && row.Name != "warden.toolcall" {
		return
	}
	secs := row.Start / 1e9
	ms := float64(row.End-row.Start) / 1e6
	// Every call counts in its minute and in its hour.
	for _, width := range []int64{store.RollupMinute, store.RollupHour} {
		k := rollupKey{row.Namespace, row.Agent, row.Tool, row.Model, width, secs / width * width}
		r := s.m[k]
		if r == nil {
			r = &store.SpanRollup{Namespace: k.ns, Agent: k.agent, Tool: k.tool, Model: k.model, Width: width, Minute: k.minute}
			s.m[k] = r
		}
		r.Calls++
		if row.Status == store.SpanStatusError {
			r.Errors++
		}
		r.LatencySum += ms
		r.Cost += row.Cost
		r.Tokens += row.Tokens
		r.Hist[store.SpanHistBucket(ms)]++
	}
}

// merge adds every row of o.
func (s *rollupSet) merge(rs []store.SpanRollup) {
	for i := range rs {
		r := &rs[i]
		k := rollupKey{r.Namespace, r.Agent, r.Tool, r.Model, r.Width, r.Minute}
		if have := s.m[k]; have != nil {
			have.Add(r)
			continue
		}
		cp := *r
		s.m[k] = &cp
	}
}

// rows returns the rows in no particular order: a batch's, which the
// writer adds to its own set.
func (s *rollupSet) rows() []store.SpanRollup {
	out := make([]store.SpanRollup, 0, len(s.m))
	for _, r := range s.m {
		out = append(out, *r)
	}
	return out
}

// list returns the rows in key order, so that concurrent writers of one
// tenant lock rows in the same order.
func (s *rollupSet) list() []store.SpanRollup {
	out := s.rows()
	slices.SortFunc(out, func(a, b store.SpanRollup) int {
		return cmp.Or(cmp.Compare(a.Width, b.Width), cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Agent, b.Agent),
			cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Model, b.Model))
	})
	return out
}
