package bench

import (
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestExportTemplate checks that the prepared exports are benchRequest's
// agent traces with ids, executions and times of their own.
func TestExportTemplate(t *testing.T) {
	tmpl, err := newExportTemplate(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	traces, spans, execs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	now := time.Now()
	var buf []byte
	for seq := uint64(1); seq <= 3; seq++ {
		buf = tmpl.fill(buf, seq, now)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(buf, &req); err != nil {
			t.Fatalf("export %d does not decode: %v", seq, err)
		}
		all := req.ResourceSpans[0].ScopeSpans[0].Spans
		if len(all) != 512 {
			t.Fatalf("export %d has %d spans", seq, len(all))
		}
		for i, sp := range all {
			root := all[i/8*8]
			if string(sp.TraceId) != string(root.TraceId) {
				t.Fatalf("span %d is not in its trace", i)
			}
			if i%8 == 0 {
				if traces[string(sp.TraceId)] {
					t.Fatalf("trace id %x repeats", sp.TraceId)
				}
				traces[string(sp.TraceId)] = true
				for _, kv := range sp.Attributes {
					if kv.Key == "warden.execution" {
						e := kv.Value.GetStringValue()
						if execs[e] {
							t.Fatalf("execution %s repeats", e)
						}
						execs[e] = true
					}
				}
			} else if string(sp.ParentSpanId) != string(root.SpanId) {
				t.Fatalf("span %d's parent is not its trace's root", i)
			}
			if spans[string(sp.SpanId)] {
				t.Fatalf("span id %x repeats", sp.SpanId)
			}
			spans[string(sp.SpanId)] = true
			start := time.Unix(0, int64(sp.StartTimeUnixNano))
			if d := now.Sub(start); d != 5*time.Millisecond {
				t.Fatalf("span %d starts %s before now, not 5ms", i, d)
			}
			if sp.EndTimeUnixNano <= sp.StartTimeUnixNano {
				t.Fatalf("span %d ends before it starts", i)
			}
		}
	}
	if len(traces) != 3*64 || len(execs) != 3*64 {
		t.Fatalf("%d traces and %d executions, want %d", len(traces), len(execs), 3*64)
	}
}
