package trace

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// The span answers are written by spanWriter; these tests hold it to the
// bytes json.Marshal writes for the SpanViews that view builds (the
// reference the answers were encoded with before).

func sv(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

func arr(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func kvlist(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
}

func dv(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}

func iv(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}

// tricky holds strings JSON escapes: HTML characters, control
// characters, quotes, the line and paragraph separators, non-ASCII.
var tricky = []string{
	"", "plain", "<script>&amp;</script>", "quote \" backslash \\ slash /", "\x00\x01\x07\b\f\n\r\t\x1f\x7f",
	"line\u2028para\u2029", "Grüße, 世界, 🙂", "\ufffd", "a\u00a0b",
}

// variedAttrs is an attribute list with every kind of value.
func variedAttrs() []*commonpb.KeyValue {
	out := []*commonpb.KeyValue{
		kv("z.last", sv("zz")), kv("a.first", sv("aa")),
		kv("bool.t", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}),
		kv("bool.f", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}),
		kv("int.0", iv(0)), kv("int.neg", iv(-42)), kv("int.max", iv(math.MaxInt64)), kv("int.min", iv(math.MinInt64)),
		kv("double.0", dv(0)), kv("double.negzero", dv(math.Copysign(0, -1))), kv("double.small", dv(1e-7)), kv("double.edge", dv(1e-6)),
		kv("double.big", dv(1e21)), kv("double.below", dv(999999999999999999999)), kv("double.frac", dv(123.456)),
		kv("double.neg", dv(-0.000123)), kv("double.max", dv(math.MaxFloat64)), kv("double.tiny", dv(5e-324)), kv("double.third", dv(1.0/3)),
		kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 0xfe, 0xff, '<'}}}),
		kv("bytes.empty", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{}}}),
		kv("array", arr(sv("x"), iv(1), dv(2.5), arr(), arr(sv("nested")), kvlist(kv("k", sv("v"))), &commonpb.AnyValue{})),
		kv("array.empty", arr()),
		kv("kvlist", kvlist(kv("b", iv(2)), kv("a", iv(1)), kv("c", kvlist(kv("deep", arr(sv("x"))))), kv("none", nil))),
		kv("kvlist.empty", kvlist()),
		kv("empty.value", &commonpb.AnyValue{}),
		kv("no.value", nil),
		kv("", sv("empty key")),
		kv("Upper", sv("sorts before lower")),
		kv("ünïcode.key<&>", sv("v")),
	}
	for i, s := range tricky {
		out = append(out, kv("tricky."+string(rune('a'+i)), sv(s)), kv(s+".as.key", iv(int64(i))))
	}
	return out
}

// nest returns a value nested depth times in arrays and kvlists.
func nest(depth int) *commonpb.AnyValue {
	v := sv("bottom")
	for i := range depth {
		if i%2 == 0 {
			v = arr(v)
		} else {
			v = kvlist(kv("k", v))
		}
	}
	return v
}

type renderCase struct {
	name string
	// row fills the row's columns; sp is stored in Data as ingest stores it.
	row func(r *store.Span)
	sp  *tracepb.Span
	// data, when set, replaces the encoding of sp.
	data []byte
	// direct says the span must be written without the reference path.
	direct bool
}

func renderCases() []renderCase {
	events := []*tracepb.Span_Event{
		{Name: "toolCallRequest", TimeUnixNano: 1_700_000_000_123_456_789, Attributes: []*commonpb.KeyValue{kv("args", sv(`{"a":"<b>"}`))}},
		{Name: "no attributes", TimeUnixNano: 1_700_000_000_000_000_000},
		{Name: "", TimeUnixNano: 0},
		{Name: "zero ns", TimeUnixNano: 1_700_000_001_000_000_000, Attributes: variedAttrs()},
	}
	links := []*tracepb.Span_Link{
		{TraceId: []byte("0123456789abcdef"), SpanId: []byte("01234567"), Attributes: []*commonpb.KeyValue{kv("l", iv(1))}},
		{TraceId: []byte{1, 2, 3}, SpanId: nil, TraceState: "k=v"},
		{},
	}
	dup := []*commonpb.KeyValue{kv("a", sv("1")), kv("b", sv("x")), kv("a", sv("2"))}
	badUTF8 := protowire.AppendTag(nil, fSpanAttributes, protowire.BytesType)
	inner := protowire.AppendTag(nil, fKVKey, protowire.BytesType)
	inner = protowire.AppendBytes(inner, []byte("k\xff"))
	badUTF8 = protowire.AppendBytes(badUTF8, inner)
	cases := []renderCase{
		{name: "plain", sp: &tracepb.Span{}, direct: true},
		{name: "every attribute kind", sp: &tracepb.Span{Attributes: variedAttrs()}, direct: true},
		{name: "events links status", sp: &tracepb.Span{Attributes: variedAttrs(), Events: events, Links: links, Status: &tracepb.Status{Message: "Tool<failed>\n\u2028"}}, direct: true},
		{name: "trace state flags dropped", sp: &tracepb.Span{TraceState: "a=b", Flags: 0x301, DroppedAttributesCount: 3, DroppedEventsCount: 2, DroppedLinksCount: 1}, direct: true},
		{name: "columns", row: func(r *store.Span) {
			r.Service, r.Agent, r.Tool, r.Model, r.Execution = "svc<>", "bot\u2028", "crm.get", "gpt-x", "exec-1"
			r.Cost, r.Tokens, r.Status, r.Kind = 0.0125, 1234, store.SpanStatusError, int(tracepb.Span_SPAN_KIND_CLIENT)
		}, sp: &tracepb.Span{}, direct: true},
		{name: "tiny and huge cost", row: func(r *store.Span) { r.Cost = 1e-9 }, sp: &tracepb.Span{}, direct: true},
		{name: "negative cost tokens", row: func(r *store.Span) { r.Cost, r.Tokens = -1e22, -5 }, sp: &tracepb.Span{}, direct: true},
		{name: "negative zero cost", row: func(r *store.Span) { r.Cost = math.Copysign(0, -1) }, sp: &tracepb.Span{}, direct: true},
		{name: "unknown kind and status", row: func(r *store.Span) { r.Kind, r.Status = 99, 7 }, sp: &tracepb.Span{}, direct: true},
		{name: "kind beyond int32", row: func(r *store.Span) { r.Kind = 1<<32 + 2 }, sp: &tracepb.Span{}, direct: true},
		{name: "root, odd times", row: func(r *store.Span) {
			r.ParentID, r.Start, r.End = [8]byte{}, -1, 1<<62
		}, sp: &tracepb.Span{}, direct: true},
		{name: "invalid UTF-8 in columns", row: func(r *store.Span) { r.Name, r.Namespace, r.Agent = "bad\xffname\xc3", "ns\xe2\x80", "\xed\xa0\x80" }, sp: &tracepb.Span{}, direct: true},
		{name: "unknown resource", row: func(r *store.Span) { r.Resource = 999 }, sp: &tracepb.Span{}, direct: true},
		{name: "resource without scope", row: func(r *store.Span) { r.Resource = 2 }, sp: &tracepb.Span{}, direct: true},
		{name: "empty resource", row: func(r *store.Span) { r.Resource = 3 }, sp: &tracepb.Span{}, direct: true},
		{name: "nested to the limit", sp: &tracepb.Span{Attributes: []*commonpb.KeyValue{kv("deep", nest(16))}}, direct: true},
		{name: "nested past the limit", sp: &tracepb.Span{Attributes: []*commonpb.KeyValue{kv("deeper", nest(17)), kv("deepest", nest(40))}}},
		{name: "duplicate keys", sp: &tracepb.Span{Attributes: dup}},
		{name: "duplicate keys in a kvlist", sp: &tracepb.Span{Attributes: []*commonpb.KeyValue{kv("m", kvlist(dup...))}}},
		{name: "NaN attribute", sp: &tracepb.Span{Attributes: []*commonpb.KeyValue{kv("nan", dv(math.NaN()))}}},
		{name: "infinite cost", row: func(r *store.Span) { r.Cost = math.Inf(1) }, sp: &tracepb.Span{}},
		{name: "invalid UTF-8 key", data: badUTF8},
		{name: "truncated data", data: []byte{0x4a, 0x10, 0x0a}},
		{name: "garbage data", data: []byte{0xff, 0xff, 0xff}},
		{name: "empty data", data: []byte{}, direct: true},
		{name: "unknown fields", data: append(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7),
			// attributes (9) as a varint is an unknown field too.
			protowire.AppendVarint(protowire.AppendTag(nil, fSpanAttributes, protowire.VarintType), 1)...), direct: true},
		{name: "status twice", data: append(protowire.AppendBytes(protowire.AppendTag(nil, fSpanStatus, protowire.BytesType), []byte{0x12, 1, 'a'}),
			protowire.AppendBytes(protowire.AppendTag(nil, fSpanStatus, protowire.BytesType), []byte{0x18, 2})...)},
	}
	for _, s := range tricky {
		cases = append(cases, renderCase{name: "name " + s, row: func(r *store.Span) { r.Name, r.Service = s, s },
			sp: &tracepb.Span{Status: &tracepb.Status{Message: s}, Events: []*tracepb.Span_Event{{Name: s}}}, direct: true})
	}
	return cases
}

// renderResources are the resources the cases name: 1 full, 2 without a
// scope, 3 empty.
func renderResources() map[int64]*tracepb.ResourceSpans {
	return map[int64]*tracepb.ResourceSpans{
		1: {Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", sv("svc")), kv("host", sv("<h>")), kv("n", iv(3))}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agent-sdk", Version: "0.9.0"}}}},
		2: {Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", sv("other"))}}},
		3: {ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{}}}},
	}
}

func (c renderCase) span(t *testing.T, i int) store.Span {
	t.Helper()
	r := store.Span{Namespace: "default", TraceID: [16]byte{0xab, 0xcd, byte(i)}, SpanID: [8]byte{1, 2, 3, byte(i)}, ParentID: [8]byte{9, 9},
		Name: "span " + c.name, Kind: int(tracepb.Span_SPAN_KIND_INTERNAL), Start: 1_700_000_000_000_000_000 + int64(i)*1_500,
		End: 1_700_000_000_250_000_000, Status: store.SpanStatusOK, Resource: 1}
	if c.row != nil {
		c.row(&r)
	}
	r.Data = c.data
	if c.data == nil {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.sp)
		require.NoError(t, err)
		r.Data = b
	}
	return r
}

// reference encodes as the handlers did before spanWriter: views and
// json.Marshal.
func reference(rows []store.Span, resources map[int64]*tracepb.ResourceSpans, wrap func([]SpanView) any) ([]byte, error) {
	vs, err := views(rows, resources)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wrap(vs))
}

func TestSpanWriterMatchesReference(t *testing.T) {
	t.Parallel()
	resources := renderResources()
	for i, c := range renderCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rows := []store.Span{c.span(t, i)}
			want, wantErr := reference(rows, resources, func(vs []SpanView) any {
				return Trace{TraceID: "abc", Spans: vs, Truncated: i%2 == 0}
			})
			got, err := newSpanWriter(resources).appendTraceJSON([]byte("prefix"), "abc", rows, i%2 == 0)
			if wantErr != nil {
				require.Error(t, err, "the reference fails: %v", wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "prefix"+string(want), string(got))
			require.True(t, json.Valid(got[len("prefix"):]))

			_, directErr := newSpanWriter(resources).appendSpanDirect(nil, &rows[0])
			if c.direct {
				require.NoError(t, directErr, "the span should be written without the reference path")
			} else {
				require.ErrorIs(t, directErr, errSlowPath)
			}
		})
	}
}

// TestSpanWriterManySpans writes every case in one answer, as a trace and
// as a span list, so that scratch space reused from span to span cannot
// leak between them.
func TestSpanWriterManySpans(t *testing.T) {
	t.Parallel()
	resources := renderResources()
	var rows []store.Span
	for i, c := range renderCases() {
		r := c.span(t, i)
		if _, err := reference([]store.Span{r}, resources, func(vs []SpanView) any { return vs }); err != nil {
			continue // a span the reference cannot write fails the whole answer
		}
		rows = append(rows, r, r)
	}
	require.Greater(t, len(rows), 50)
	w := newSpanWriter(resources)
	for _, cont := range []string{"", "next<&>"} {
		want, err := reference(rows, resources, func(vs []SpanView) any {
			return SpanList{Kind: "SpanList", Metadata: ListMeta{Continue: cont}, Items: vs}
		})
		require.NoError(t, err)
		got, err := w.appendSpanListJSON(nil, cont, rows)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	want, err := reference(nil, resources, func(vs []SpanView) any { return SpanList{Kind: "SpanList", Items: vs} })
	require.NoError(t, err)
	got, err := w.appendSpanListJSON(nil, "", nil)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestSpanWriterLargeAnswer writes a 1,000-span answer with the cases
// spread through it: the same bytes, and a span the reference cannot
// write fails the answer wherever it is.
func TestSpanWriterLargeAnswer(t *testing.T) {
	t.Parallel()
	rows, resources := agentTraceRows(t, 1000)
	for i, c := range renderCases() {
		r := c.span(t, i)
		r.Resource = rows[0].Resource
		if _, err := reference([]store.Span{r}, resources, func(vs []SpanView) any { return vs }); err == nil {
			rows[i*20] = r
		}
	}
	wrap := func(vs []SpanView) any { return Trace{TraceID: "t", Spans: vs} }
	for _, bad := range []int{-1, 10, 900} {
		rows := slices.Clone(rows)
		if bad >= 0 {
			rows[bad].Cost = math.NaN()
		}
		want, wantErr := reference(rows, resources, wrap)
		got, err := newSpanWriter(resources).appendTraceJSON(nil, "t", rows, false)
		if bad < 0 {
			require.NoError(t, wantErr)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			continue
		}
		require.Error(t, wantErr)
		require.Error(t, err, "a bad span at %d", bad)
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	for r := rune(0x80); r < 0x3000; r += 7 {
		all.WriteRune(r)
	}
	for _, s := range append(tricky, all.String(), "\xf0\x9f\x99", "\xf4\x90\x80\x80", "\xc0\xaf", "end\xe2\x80\xa8") {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(resource.AppendJSONString(nil, s)))
		require.Equal(t, string(want), string(resource.AppendJSONString(nil, []byte(s))))
	}
}

func TestAppendTimeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	w := newSpanWriter(nil)
	values := []int64{0, 1, -1, 999_999_999, 1e9, -1e9, -1e9 + 1, -1e9 - 1, 1_700_000_000_000_000_000, 1_700_000_000_100_000_000,
		1_700_000_000_120_000_000, 1_700_000_000_123_456_789, 1_700_000_001_000_000_001, 1_700_000_000_000_000_010, math.MaxInt64, math.MinInt64,
		math.MinInt64 + 1, 951_782_400_000_000_000 /* 2000-02-29 */}
	for i := range int64(2000) {
		values = append(values, 1_700_000_000_999_999_000+i*777_777, -i*1_234_567_891)
	}
	for _, ns := range values {
		want, err := json.Marshal(time.Unix(0, ns).UTC())
		require.NoError(t, err)
		require.Equal(t, string(want), string(w.appendTime(nil, ns)), "%d", ns)
	}
}

// FuzzSpanWriter holds the writer to the reference for any stored
// encoding and column values.
func FuzzSpanWriter(f *testing.F) {
	for i, c := range renderCases() {
		data := c.data
		if data == nil {
			data, _ = proto.Marshal(c.sp)
		}
		f.Add(data, "name", "agent", 0.5, int64(i), i, i%3)
	}
	resources := renderResources()
	f.Fuzz(func(t *testing.T, data []byte, name, agent string, cost float64, tokens int64, kind, status int) {
		rows := []store.Span{{Namespace: "ns", TraceID: [16]byte{1}, SpanID: [8]byte{2}, Name: name, Agent: agent, Cost: cost, Tokens: tokens,
			Kind: kind, Status: status, Start: tokens, End: tokens + int64(kind), Resource: int64(status % 4), Data: data}}
		want, wantErr := reference(rows, resources, func(vs []SpanView) any { return Trace{TraceID: "t", Spans: vs} })
		got, err := newSpanWriter(resources).appendTraceJSON(nil, "t", rows, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("writer error %v, reference error %v", err, wantErr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("writer:\n%s\nreference:\n%s", got, want)
		}
	})
}

// agentTraceRows are the stored rows of a trace of n spans shaped as
// `warden bench otlp` sends them: agent runs, tool calls, model calls.
func agentTraceRows(tb testing.TB, n int) ([]store.Span, map[int64]*tracepb.ResourceSpans) {
	tb.Helper()
	traceID := []byte("0123456789abcdef")
	now := uint64(1_700_000_000_000_000_000)
	var spans []*tracepb.Span
	for i := range n {
		sp := &tracepb.Span{TraceId: traceID, SpanId: binary.BigEndian.AppendUint64(nil, uint64(i)+1), Name: "span",
			StartTimeUnixNano: now + uint64(i)*1e5, EndTimeUnixNano: now + uint64(i)*1e5 + uint64(i%97+1)*1e5, Kind: tracepb.Span_SPAN_KIND_INTERNAL}
		if i > 0 {
			sp.ParentSpanId = []byte{0, 0, 0, 0, 0, 0, 0, 1}
		}
		switch i % 8 {
		case 0:
			sp.Name = "invoke_agent support-bot"
			sp.Attributes = []*commonpb.KeyValue{kv("warden.agent", sv("support-bot")), kv("warden.execution", sv("exec-1")), kv("gen_ai.operation.name", sv("invoke_agent"))}
		case 1, 3, 5, 7:
			sp.Name = "execute_tool crm.get"
			sp.Attributes = []*commonpb.KeyValue{kv("warden.agent", sv("support-bot")), kv("warden.tool", sv("crm.get")), kv("gen_ai.operation.name", sv("execute_tool")),
				kv("warden.side_effect", sv("external_write")), kv("warden.cost", dv(0.0001)),
				kv("warden.approval_required", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}})}
			if i%50 == 1 {
				sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "ToolFailed"}
			}
		default:
			sp.Name = "chat gpt-4o"
			sp.Attributes = []*commonpb.KeyValue{kv("warden.agent", sv("support-bot")), kv("gen_ai.request.model", sv("gpt-4o")), kv("gen_ai.operation.name", sv("chat")),
				kv("gen_ai.usage.input_tokens", iv(900)), kv("gen_ai.usage.output_tokens", iv(120)), kv("warden.cost", dv(0.0021))}
		}
		spans = append(spans, sp)
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", sv("agents")), kv("service.version", sv("1.4.2")), kv("deployment.environment", sv("prod"))}}
	rss := []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agent-sdk", Version: "0.9.0"}, Spans: spans}}}}
	c := convertResourceSpans(rss, Source{Tenant: "t", Namespace: "default"}, Limits{}.WithDefaults())
	require.Equal(tb, n, len(c.batch.Spans), c.message())
	resources := map[int64]*tracepb.ResourceSpans{}
	for _, r := range c.batch.Resources {
		rs := &tracepb.ResourceSpans{}
		require.NoError(tb, proto.Unmarshal(r.Data, rs))
		resources[r.ID] = rs
	}
	return c.batch.Spans, resources
}

// BenchmarkTraceJSON1000 writes the answer of GET /v1/traces/{id} for a
// 1,000-span agent trace: spanWriter, and the views and json.Marshal it
// replaced.
func BenchmarkTraceJSON1000(b *testing.B) {
	rows, resources := agentTraceRows(b, 1000)
	b.Run("writer", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = newSpanWriter(resources).appendTraceJSON(buf[:0], "0123456789abcdef", rows, false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			if _, err := reference(rows, resources, func(vs []SpanView) any { return Trace{TraceID: "0123456789abcdef", Spans: vs} }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
