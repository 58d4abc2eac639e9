package trace

import (
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func seedRequest() *collectortrace.ExportTraceServiceRequest {
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: []byte("0123456789abcdef"), SpanId: []byte("01234567"), Name: "s", StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{{Key: "warden.tool", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "x.y"}}}},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "m"},
		}}}},
	}}}
}

// checkConverted asserts what convert promises for any request: every
// stored span is valid and comes back from its stored form.
func checkConverted(t *testing.T, req *collectortrace.ExportTraceServiceRequest) {
	c := convert(req, Source{Tenant: "t", Namespace: "default"}, Limits{}.WithDefaults())
	for i := range c.batch.Spans {
		row := &c.batch.Spans[i]
		if row.TraceID == ([16]byte{}) || row.SpanID == ([8]byte{}) || row.End < row.Start {
			t.Fatalf("an invalid span was accepted: %+v", row)
		}
		if _, err := rebuild(row); err != nil {
			t.Fatalf("stored span does not decode: %v", err)
		}
	}
}

// FuzzDecodeOTLPProto feeds arbitrary bytes to the OTLP/HTTP protobuf path.
func FuzzDecodeOTLPProto(f *testing.F) {
	b, _ := proto.Marshal(seedRequest())
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := &collectortrace.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			return
		}
		checkConverted(t, req)
	})
}

// FuzzDecodeOTLPJSON feeds arbitrary bytes to the OTLP/JSON path.
func FuzzDecodeOTLPJSON(f *testing.F) {
	f.Add([]byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[
		{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"x","kind":2,"startTimeUnixNano":"1544712660000000000",
		"endTimeUnixNano":"1544712661000000000","attributes":[{"key":"warden.tool","value":{"stringValue":"a.b"}}],"status":{"code":2}}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeOTLPJSON(body)
		if err != nil {
			return
		}
		checkConverted(t, req)
	})
}

// FuzzParseSelector checks the selector parser never panics and that what
// it accepts parses the same again.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "agent=support-bot,tool=stripe.refund,status=error", "tool!=x", "status==ok", "a=b=c", "name=,", "namespace=prod,execution=e1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		if sel.Status < -1 || sel.Status > 2 {
			t.Fatalf("status %d out of range", sel.Status)
		}
		again, err := ParseSelector(s)
		if err != nil || again != sel {
			t.Fatalf("parse is not stable: %v", err)
		}
	})
}

// FuzzParseMetricQuery checks the metrics parser never panics and that
// what it accepts is evaluable.
func FuzzParseMetricQuery(f *testing.F) {
	for _, s := range []string{"rate(calls[5m]) by (agent)", `error_rate(calls{agent="a",tool!="b"}[1h]) by (tool)`, "p99(latency[1h]) by (tool)",
		"sum(cost[1d]) by (model)", "tokens[1w]", "rate(calls[5m]", `calls{agent="unterminated}[1m]`, "p99(cost[1h])"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseMetricQuery(s)
		if err != nil {
			return
		}
		if q.Window < minWindow || q.Window > maxWindow {
			t.Fatalf("window %s out of range", q.Window)
		}
		_ = q.evaluate(nil)
		_ = q.Unit()
	})
}

// FuzzParseOCSF checks the OCSF parser never panics and that what it
// accepts has the required columns.
func FuzzParseOCSF(f *testing.F) {
	f.Add([]byte(`{"class_uid":6003,"category_uid":6,"activity_id":1,"type_uid":600301,"severity_id":1,"time":1700000000000,
		"metadata":{"version":"1.3.0","product":{"name":"x"}},"actor":{"user":{"name":"a"}},"api":{"operation":"Get"}}`))
	f.Add([]byte(`[{"class_uid":1}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := parseOCSF(body, "default")
		if err != nil {
			return
		}
		for _, e := range evs {
			if e.ClassUID <= 0 || e.Time <= 0 || len(e.Data) == 0 {
				t.Fatalf("accepted an event without its required columns: %+v", e)
			}
		}
	})
}
