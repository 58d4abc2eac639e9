package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Attributes by which Warden's own spans name their tenant and namespace.
// They are trusted only on spans this process made (Exporter), never on
// spans received over OTLP, whose tenant and namespace come from the
// credential.
const (
	AttrTenant    = "warden.tenant"
	AttrNamespace = "warden.namespace"
)

// Exporter is an OpenTelemetry SDK SpanExporter that writes Warden's own
// spans (the gateway's, and the router's and MCP gateway's) straight into
// the trace store, beside the spans received over OTLP. A span's tenant is
// its warden.tenant attribute, which TenantProcessor copies from parent to
// child; spans without one are dropped (and counted).
type Exporter struct {
	s *Service
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// Exporter returns the service's SpanExporter.
func (s *Service) Exporter() *Exporter { return &Exporter{s: s} }

// ExportSpans queues the spans, grouped by tenant, without waiting for the
// write: a full queue drops them rather than slow the gateway.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	type group struct {
		req *tracepb.ResourceSpans
		src Source
	}
	groups := map[[2]string]*group{}
	var order [][2]string
	for _, ro := range spans {
		tenant, ns := "", ""
		for _, kv := range ro.Attributes() {
			switch kv.Key {
			case AttrTenant:
				tenant = kv.Value.AsString()
			case AttrNamespace:
				ns = kv.Value.AsString()
			}
		}
		if tenant == "" {
			e.s.metrics.dropped.Add(1)
			continue
		}
		if ns == "" {
			ns = "default"
		}
		k := [2]string{tenant, ns}
		g := groups[k]
		if g == nil {
			g = &group{req: &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: keyValues(ro.Resource().Attributes())}}, src: Source{Tenant: tenant, Namespace: ns}}
			groups[k] = g
			order = append(order, k)
		}
		sc := ro.InstrumentationScope()
		var ss *tracepb.ScopeSpans
		for _, x := range g.req.ScopeSpans {
			if x.Scope.GetName() == sc.Name && x.Scope.GetVersion() == sc.Version {
				ss = x
			}
		}
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: sc.Name, Version: sc.Version}}
			g.req.ScopeSpans = append(g.req.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(ro))
	}
	for _, k := range order {
		g := groups[k]
		c := convertResourceSpans([]*tracepb.ResourceSpans{g.req}, g.src, e.s.cfg.Limits)
		e.s.metrics.dropped.Add(c.rejected)
		if len(c.batch.Spans) == 0 {
			continue
		}
		if err := e.s.writer.Submit(ctx, g.src.Tenant, &c.batch, false); err != nil {
			e.s.metrics.dropped.Add(int64(len(c.batch.Spans)))
		}
	}
	return nil
}

// Shutdown does nothing: the service's Close writes what is queued.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// spanProto converts an SDK span into OTLP.
func spanProto(ro sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := ro.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	sp := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   ro.Name(),
		Kind:                   tracepb.Span_SpanKind(ro.SpanKind()),
		StartTimeUnixNano:      uint64(ro.StartTime().UnixNano()),
		EndTimeUnixNano:        uint64(ro.EndTime().UnixNano()),
		Attributes:             keyValues(ro.Attributes()),
		DroppedAttributesCount: uint32(max(0, ro.DroppedAttributes())),
		DroppedEventsCount:     uint32(max(0, ro.DroppedEvents())),
		DroppedLinksCount:      uint32(max(0, ro.DroppedLinks())),
	}
	if p := ro.Parent(); p.IsValid() {
		psid := p.SpanID()
		sp.ParentSpanId = psid[:]
	}
	for _, ev := range ro.Events() {
		sp.Events = append(sp.Events, &tracepb.Span_Event{Name: ev.Name, TimeUnixNano: uint64(ev.Time.UnixNano()),
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(max(0, ev.DroppedAttributeCount))})
	}
	for _, l := range ro.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		sp.Links = append(sp.Links, &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:], Attributes: keyValues(l.Attributes)})
	}
	switch st := ro.Status(); st.Code {
	case codes.Error:
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	case codes.Ok:
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return sp
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		var vals []*commonpb.AnyValue
		switch v.Type() {
		case attribute.BOOLSLICE:
			for _, x := range v.AsBoolSlice() {
				vals = append(vals, anyValue(attribute.BoolValue(x)))
			}
		case attribute.INT64SLICE:
			for _, x := range v.AsInt64Slice() {
				vals = append(vals, anyValue(attribute.Int64Value(x)))
			}
		case attribute.FLOAT64SLICE:
			for _, x := range v.AsFloat64Slice() {
				vals = append(vals, anyValue(attribute.Float64Value(x)))
			}
		default:
			for _, x := range v.AsStringSlice() {
				vals = append(vals, anyValue(attribute.StringValue(x)))
			}
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

// TenantProcessor is a SpanProcessor that gives every span started under a
// parent of this process the parent's warden.tenant and warden.namespace,
// so the gateway's step spans land in the tenant of their call.
type TenantProcessor struct{}

var _ sdktrace.SpanProcessor = TenantProcessor{}

// OnStart copies the tenant and namespace from the parent span.
func (TenantProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	for _, kv := range s.Attributes() {
		if kv.Key == AttrTenant {
			return
		}
	}
	p, ok := oteltrace.SpanFromContext(parent).(sdktrace.ReadOnlySpan)
	if !ok {
		return
	}
	var add []attribute.KeyValue
	for _, kv := range p.Attributes() {
		if kv.Key == AttrTenant || kv.Key == AttrNamespace {
			add = append(add, kv)
		}
	}
	if len(add) > 0 {
		s.SetAttributes(add...)
	}
}

// OnEnd does nothing.
func (TenantProcessor) OnEnd(sdktrace.ReadOnlySpan) {}

// Shutdown does nothing.
func (TenantProcessor) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing.
func (TenantProcessor) ForceFlush(context.Context) error { return nil }
