package trace

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/store"
)

// The protobuf transports (OTLP/gRPC and OTLP/HTTP protobuf) decode an
// ExportTraceServiceRequest straight into rows with protowire, instead
// of unmarshalling it into the generated structs and converting those:
// the structs of a 512-span export are thousands of allocations, and a
// span's stored protobuf (store.Span.Data) is the raw bytes of its
// attributes, events and links, re-tagged, rather than a new encoding.
// The result is what proto.Unmarshal and convert give
// (TestWireMatchesStructs): the same rows, the same rejections, and an
// error whenever proto.Unmarshal fails. Resources and scopes, once per
// request, are still unmarshalled with proto so that their ids are those
// of convert.

// maxWireDepth is protobuf's default recursion limit: nesting deeper is
// an error, as for proto.Unmarshal.
const maxWireDepth = 10000

// errWireDepth is the error of a message nested deeper than maxWireDepth.
var errWireDepth = errors.New("exceeded maximum recursion depth")

// Field numbers of the OTLP messages read here (opentelemetry-proto v1).
const (
	fieldRequestResourceSpans = 1

	// ResourceSpans (resource, scope_spans, schema_url) and ScopeSpans
	// (scope, spans, schema_url) number their fields alike.
	fieldHead      = 1
	fieldChildren  = 2
	fieldSchemaURL = 3

	fieldSpanTraceID      = 1
	fieldSpanSpanID       = 2
	fieldSpanTraceState   = 3
	fieldSpanParentID     = 4
	fieldSpanName         = 5
	fieldSpanKind         = 6
	fieldSpanStart        = 7
	fieldSpanEnd          = 8
	fieldSpanAttributes   = 9
	fieldSpanDroppedAttrs = 10
	fieldSpanEvents       = 11
	fieldSpanDroppedEvts  = 12
	fieldSpanLinks        = 13
	fieldSpanDroppedLinks = 14
	fieldSpanStatus       = 15
	fieldSpanFlags        = 16

	fieldStatusMessage = 2
	fieldStatusCode    = 3

	fieldEventTime    = 1
	fieldEventName    = 2
	fieldEventAttrs   = 3
	fieldEventDropped = 4

	fieldLinkTraceID    = 1
	fieldLinkSpanID     = 2
	fieldLinkTraceState = 3
	fieldLinkAttrs      = 4
	fieldLinkDropped    = 5
	fieldLinkFlags      = 6

	fieldKVKey   = 1
	fieldKVValue = 2

	fieldAnyString = 1
	fieldAnyBool   = 2
	fieldAnyInt    = 3
	fieldAnyDouble = 4
	fieldAnyArray  = 5
	fieldAnyKVList = 6
	fieldAnyBytes  = 7

	fieldListValues = 1
)

// The attributes the columns are read from (keysAgent … keysTokensOut
// and gen_ai.usage.total_tokens), as indexes into wireSpan.attrs.
const (
	attrWardenAgent = iota
	attrGenAIAgent
	attrWardenTool
	attrGenAITool
	attrWardenModel
	attrResponseModel
	attrRequestModel
	attrWardenExecution
	attrConversation
	attrWardenCost
	attrUsageCost
	attrInputTokens
	attrPromptTokens
	attrOutputTokens
	attrCompletionTokens
	attrTotalTokens
	numColumnAttrs
)

// columnAttr returns the index of a column attribute key, or -1.
func columnAttr(k []byte) int {
	switch string(k) {
	case "warden.agent":
		return attrWardenAgent
	case "gen_ai.agent.name":
		return attrGenAIAgent
	case "warden.tool":
		return attrWardenTool
	case "gen_ai.tool.name":
		return attrGenAITool
	case "warden.model":
		return attrWardenModel
	case "gen_ai.response.model":
		return attrResponseModel
	case "gen_ai.request.model":
		return attrRequestModel
	case "warden.execution":
		return attrWardenExecution
	case "gen_ai.conversation.id":
		return attrConversation
	case "warden.cost":
		return attrWardenCost
	case "gen_ai.usage.cost":
		return attrUsageCost
	case "gen_ai.usage.input_tokens":
		return attrInputTokens
	case "gen_ai.usage.prompt_tokens":
		return attrPromptTokens
	case "gen_ai.usage.output_tokens":
		return attrOutputTokens
	case "gen_ai.usage.completion_tokens":
		return attrCompletionTokens
	case "gen_ai.usage.total_tokens":
		return attrTotalTokens
	}
	return -1
}

// wireValue is what the decoder keeps of an AnyValue: which of the oneof
// is set (its field number, 0 for none), the scalar, and valueSize.
type wireValue struct {
	kind protowire.Number
	str  []byte
	i    int64
	f    float64
	size int
}

// merge is what proto's merge of a second encoding of the same AnyValue
// gives: the last member set wins; a message member set twice is merged.
func (a *wireValue) merge(b wireValue) {
	switch {
	case b.kind == 0:
	case a.kind == b.kind && (b.kind == fieldAnyArray || b.kind == fieldAnyKVList):
		a.size += b.size
	default:
		*a = b
	}
}

// columnValue is a column attribute of a span: the string of its first
// occurrence and the first number among its occurrences (the rules of
// stringAttr, intAttr and firstFloat).
type columnValue struct {
	seen      bool
	str       []byte
	hasNumber bool
	isInt     bool
	i         int64
	f         float64
}

// wireSpan is one span as the decoder reads it.
type wireSpan struct {
	traceID, spanID, parentID []byte
	name                      []byte
	traceState                []byte
	kind, status              int32
	start, end                uint64
	flags                     uint32
	droppedAttrs              uint32
	droppedEvents             uint32
	droppedLinks              uint32
	statusMessage             []byte
	// attrs, events and links are the raw encodings, in order.
	attrs, events, links [][]byte
	// bigAttr is the key of the first attribute over the value limit.
	bigAttr    []byte
	hasBigAttr bool
	// eventProblem and linkProblem are the first event's and link's
	// reason to reject the span.
	eventProblem, linkProblem string
	cols                      [numColumnAttrs]columnValue
}

func (w *wireSpan) reset() {
	attrs, events, links := w.attrs[:0], w.events[:0], w.links[:0]
	*w = wireSpan{attrs: attrs, events: events, links: links}
}

// wireDecoder turns one request into rows.
type wireDecoder struct {
	src       Source
	lim       Limits
	out       *converted
	resources map[int64]bool
	rollups   *rollupSet
	// strs interns the strings of the request's rows: names and column
	// values repeat across its spans.
	strs map[string]string
	// data holds the Data of the request's rows, one after another.
	data []byte
	span wireSpan
}

// convertProto decodes an OTLP ExportTraceServiceRequest in protobuf
// into rows for src: what proto.Unmarshal and convert give. A request
// that does not decode is an error and nothing of it is kept; invalid
// spans are rejected one by one.
func convertProto(b []byte, src Source, lim Limits) (*converted, error) {
	d := &wireDecoder{src: src, lim: lim, out: &converted{}, resources: map[int64]bool{}, rollups: newRollupSet(),
		strs: map[string]string{}, data: make([]byte, 0, len(b))}
	err := forFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == fieldRequestResourceSpans && typ == protowire.BytesType {
			return d.resourceSpans(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.out.batch.Rollups = d.rollups.rows()
	return d.out, nil
}

// forFields calls fn with every field of the message b: its number, wire
// type and, for a length-delimited field, its bytes (nil otherwise).
func forFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

// walk is forFields that also hands non-length-delimited values over as
// their integer.
func walk(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// consumeTag is protowire.ConsumeTag that also refuses field numbers
// past the largest valid one, as proto.Unmarshal does.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && !num.IsValid() {
		// protowire.ParseError's code of an invalid field number.
		return 0, 0, -2
	}
	return num, typ, n
}

// checkUTF8 is proto3's check of a string field.
func checkUTF8(v []byte, field string) error {
	if !utf8.Valid(v) {
		return fmt.Errorf("string field %s contains invalid UTF-8", field)
	}
	return nil
}

func (d *wireDecoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	d.strs[s] = s
	return s
}

// container is a ResourceSpans or a ScopeSpans as read: both are field 1
// a message (the resource or the scope), field 2 the repeated children
// (scope spans or spans) and field 3 the schema URL.
type container struct {
	// head is field 1's encodings concatenated: a message field given
	// twice is merged.
	head     []byte
	hasHead  bool
	children [][]byte
	schema   string
}

// readContainer reads a ResourceSpans or a ScopeSpans.
func readContainer(b []byte) (container, error) {
	var c container
	var schema []byte
	err := forFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldHead:
			c.head, c.hasHead = append(c.head, v...), true
		case fieldChildren:
			c.children = append(c.children, v)
		case fieldSchemaURL:
			if err := checkUTF8(v, "schema_url"); err != nil {
				return err
			}
			schema = v
		}
		return nil
	})
	c.schema = string(schema)
	return c, err
}

// resourceSpans converts one ResourceSpans.
func (d *wireDecoder) resourceSpans(b []byte) error {
	c, err := readContainer(b)
	if err != nil {
		return err
	}
	rs := &tracepb.ResourceSpans{SchemaUrl: c.schema}
	if c.hasHead {
		rs.Resource = &resourcepb.Resource{}
		if err := proto.Unmarshal(c.head, rs.Resource); err != nil {
			return fmt.Errorf("resource: %w", err)
		}
	}
	resAttrs := rs.GetResource().GetAttributes()
	service := d.intern([]byte(stringAttr(resAttrs, "service.name")))
	resAgent := firstString(resAttrs, keysAgent)
	resExec := firstString(resAttrs, keysExecution)
	rejectAll := ""
	if len(resAttrs) > d.lim.MaxAttributes {
		rejectAll = fmt.Sprintf("the resource has %d attributes, more than the limit of %d", len(resAttrs), d.lim.MaxAttributes)
	}
	for _, sb := range c.children {
		if err := d.scopeSpans(rs, sb, rejectAll, service, resAgent, resExec); err != nil {
			return err
		}
	}
	return nil
}

// scopeSpans converts one ScopeSpans of rs.
func (d *wireDecoder) scopeSpans(rs *tracepb.ResourceSpans, b []byte, rejectAll, service, resAgent, resExec string) error {
	c, err := readContainer(b)
	if err != nil {
		return err
	}
	ss := &tracepb.ScopeSpans{SchemaUrl: c.schema}
	if c.hasHead {
		ss.Scope = &commonpb.InstrumentationScope{}
		if err := proto.Unmarshal(c.head, ss.Scope); err != nil {
			return fmt.Errorf("scope: %w", err)
		}
	}
	spans := c.children
	if len(spans) == 0 {
		return nil
	}
	var rid int64
	var rdata []byte
	if rejectAll == "" {
		rid, rdata = resourceOf(rs, ss)
	}
	used := false
	for _, spb := range spans {
		w := &d.span
		w.reset()
		if err := d.readSpan(spb, w); err != nil {
			return err
		}
		if rejectAll != "" {
			d.out.reject(rejectAll)
			continue
		}
		if msg := d.check(w); msg != "" {
			d.out.reject(msg)
			continue
		}
		d.out.batch.Spans = append(d.out.batch.Spans, d.row(w, service, resAgent, resExec, rid))
		d.rollups.add(&d.out.batch.Spans[len(d.out.batch.Spans)-1])
		used = true
	}
	if used && !d.resources[rid] {
		d.resources[rid] = true
		d.out.batch.Resources = append(d.out.batch.Resources, store.SpanResource{ID: rid, Data: rdata})
	}
	return nil
}

// readSpan reads and checks the encoding of one span into w.
func (d *wireDecoder) readSpan(b []byte, w *wireSpan) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch typ {
		case protowire.BytesType:
			switch num {
			case fieldSpanTraceID:
				w.traceID = v
			case fieldSpanSpanID:
				w.spanID = v
			case fieldSpanParentID:
				w.parentID = v
			case fieldSpanTraceState:
				if err := checkUTF8(v, "trace_state"); err != nil {
					return err
				}
				w.traceState = v
			case fieldSpanName:
				if err := checkUTF8(v, "name"); err != nil {
					return err
				}
				w.name = v
			case fieldSpanAttributes:
				key, val, err := readKeyValue(v, 1)
				if err != nil {
					return err
				}
				w.attrs = append(w.attrs, v)
				if !w.hasBigAttr && val.size > d.lim.MaxValueBytes {
					w.bigAttr, w.hasBigAttr = key, true
				}
				if i := columnAttr(key); i >= 0 {
					c := &w.cols[i]
					if !c.seen {
						c.seen = true
						if val.kind == fieldAnyString {
							c.str = val.str
						}
					}
					if !c.hasNumber && (val.kind == fieldAnyInt || val.kind == fieldAnyDouble) {
						c.hasNumber, c.isInt, c.i, c.f = true, val.kind == fieldAnyInt, val.i, val.f
					}
				}
			case fieldSpanEvents:
				if err := d.readEvent(v, w); err != nil {
					return err
				}
				w.events = append(w.events, v)
			case fieldSpanLinks:
				if err := d.readLink(v, w); err != nil {
					return err
				}
				w.links = append(w.links, v)
			case fieldSpanStatus:
				err := walk(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
					switch {
					case num == fieldStatusMessage && typ == protowire.BytesType:
						if err := checkUTF8(v, "message"); err != nil {
							return err
						}
						w.statusMessage = v
					case num == fieldStatusCode && typ == protowire.VarintType:
						w.status = int32(x)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("status: %w", err)
				}
			}
		case protowire.VarintType:
			switch num {
			case fieldSpanKind:
				w.kind = int32(x)
			case fieldSpanDroppedAttrs:
				w.droppedAttrs = uint32(x)
			case fieldSpanDroppedEvts:
				w.droppedEvents = uint32(x)
			case fieldSpanDroppedLinks:
				w.droppedLinks = uint32(x)
			}
		case protowire.Fixed64Type:
			switch num {
			case fieldSpanStart:
				w.start = x
			case fieldSpanEnd:
				w.end = x
			}
		case protowire.Fixed32Type:
			if num == fieldSpanFlags {
				w.flags = uint32(x)
			}
		}
		return nil
	})
}

// readEvent checks an event and notes its reason to reject the span.
func (d *wireDecoder) readEvent(b []byte, w *wireSpan) error {
	var name []byte
	n := 0
	var big []byte
	hasBig := false
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldEventName:
			if err := checkUTF8(v, "name"); err != nil {
				return err
			}
			name = v
		case fieldEventAttrs:
			key, val, err := readKeyValue(v, 2)
			if err != nil {
				return err
			}
			n++
			if !hasBig && val.size > d.lim.MaxValueBytes {
				big, hasBig = key, true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if w.eventProblem == "" {
		switch {
		case n > d.lim.MaxAttributes:
			w.eventProblem = fmt.Sprintf("event %q has %d attributes, more than the limit of %d", name, n, d.lim.MaxAttributes)
		case hasBig:
			w.eventProblem = fmt.Sprintf("attribute %q of event %q is longer than %d bytes", big, name, d.lim.MaxValueBytes)
		}
	}
	return nil
}

// readLink checks a link and notes its reason to reject the span.
func (d *wireDecoder) readLink(b []byte, w *wireSpan) error {
	n := 0
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldLinkTraceState:
			return checkUTF8(v, "trace_state")
		case fieldLinkAttrs:
			if _, _, err := readKeyValue(v, 2); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if w.linkProblem == "" && n > d.lim.MaxAttributes {
		w.linkProblem = fmt.Sprintf("a link has %d attributes, more than the limit of %d", n, d.lim.MaxAttributes)
	}
	return nil
}

// readKeyValue checks a KeyValue at nesting depth and returns its key
// and value (valueSize of the value at depth 0).
func readKeyValue(b []byte, depth int) ([]byte, wireValue, error) {
	return readKeyValueAt(b, depth, 0)
}

// readKeyValueAt is readKeyValue whose value is at valueSize's depth vd.
func readKeyValueAt(b []byte, depth, vd int) ([]byte, wireValue, error) {
	if depth > maxWireDepth {
		return nil, wireValue{}, errWireDepth
	}
	var key []byte
	var val wireValue
	hasVal := false
	err := forFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldKVKey:
			if err := checkUTF8(v, "key"); err != nil {
				return err
			}
			key = v
		case fieldKVValue:
			a, err := readAnyValue(v, depth+1, vd)
			if err != nil {
				return err
			}
			if !hasVal {
				val, hasVal = a, true
			} else {
				val.merge(a)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wireValue{}, err
	}
	if !hasVal || val.kind == 0 {
		val.size = nilValueSize(vd)
	}
	return key, val, nil
}

// nilValueSize is valueSize of a value that is not set, at depth.
func nilValueSize(depth int) int {
	if depth > 8 {
		return 1 << 30
	}
	return 8
}

// readAnyValue checks an AnyValue at nesting depth and returns what it
// holds, with valueSize at its depth vd.
func readAnyValue(b []byte, depth, vd int) (wireValue, error) {
	if depth > maxWireDepth {
		return wireValue{}, errWireDepth
	}
	var out wireValue
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		var a wireValue
		switch {
		case num == fieldAnyString && typ == protowire.BytesType:
			if err := checkUTF8(v, "string_value"); err != nil {
				return err
			}
			a = wireValue{kind: num, str: v, size: len(v)}
		case num == fieldAnyBytes && typ == protowire.BytesType:
			a = wireValue{kind: num, size: len(v)}
		case num == fieldAnyBool && typ == protowire.VarintType:
			a = wireValue{kind: num, size: 8}
		case num == fieldAnyInt && typ == protowire.VarintType:
			a = wireValue{kind: num, i: int64(x), size: 8}
		case num == fieldAnyDouble && typ == protowire.Fixed64Type:
			a = wireValue{kind: num, f: math.Float64frombits(x), size: 8}
		case (num == fieldAnyArray || num == fieldAnyKVList) && typ == protowire.BytesType:
			size, err := readList(v, num == fieldAnyKVList, depth+1, vd)
			if err != nil {
				return err
			}
			a = wireValue{kind: num, size: size}
		default:
			return nil
		}
		out.merge(a)
		return nil
	})
	if err != nil {
		return wireValue{}, err
	}
	if vd > 8 {
		out.size = 1 << 30
	} else if out.kind == 0 {
		out.size = 8
	}
	return out, nil
}

// readList checks an ArrayValue (or a KeyValueList) and returns the
// valueSize of its elements, at depth vd+1.
func readList(b []byte, kv bool, depth, vd int) (int, error) {
	if depth > maxWireDepth {
		return 0, errWireDepth
	}
	size := 0
	err := forFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != fieldListValues || typ != protowire.BytesType {
			return nil
		}
		if kv {
			key, val, err := readKeyValueAt(v, depth+1, vd+1)
			if err != nil {
				return err
			}
			size += len(key) + val.size
			return nil
		}
		a, err := readAnyValue(v, depth+1, vd+1)
		if err != nil {
			return err
		}
		size += a.size + 1
		return nil
	})
	return size, err
}

// check is checkSpan over a decoded span: why it cannot be stored, or "".
func (d *wireDecoder) check(w *wireSpan) string {
	lim := d.lim
	id := func() string { return fmt.Sprintf("span %x", w.spanID) }
	switch {
	case len(w.traceID) != 16 || allZero(w.traceID):
		return id() + ": trace_id must be 16 bytes, not all zero"
	case len(w.spanID) != 8 || allZero(w.spanID):
		return fmt.Sprintf("a span of trace %x: span_id must be 8 bytes, not all zero", w.traceID)
	case len(w.parentID) != 0 && len(w.parentID) != 8:
		return id() + ": parent_span_id must be empty or 8 bytes"
	case len(w.name) == 0:
		return id() + ": the name is empty"
	case len(w.name) > lim.MaxNameBytes:
		return fmt.Sprintf("%s: the name is longer than %d bytes", id(), lim.MaxNameBytes)
	case w.start == 0 || w.start > 1<<62:
		return id() + ": start_time_unix_nano is missing or out of range"
	case w.end < w.start || w.end > 1<<62:
		return id() + ": end_time_unix_nano is before the start"
	case len(w.attrs) > lim.MaxAttributes:
		return fmt.Sprintf("%s: %d attributes, more than the limit of %d", id(), len(w.attrs), lim.MaxAttributes)
	case len(w.events) > lim.MaxEvents:
		return fmt.Sprintf("%s: %d events, more than the limit of %d", id(), len(w.events), lim.MaxEvents)
	case len(w.links) > lim.MaxLinks:
		return fmt.Sprintf("%s: %d links, more than the limit of %d", id(), len(w.links), lim.MaxLinks)
	case w.hasBigAttr:
		return fmt.Sprintf("%s: attribute %q is longer than %d bytes", id(), w.bigAttr, lim.MaxValueBytes)
	case w.eventProblem != "":
		return id() + ": " + w.eventProblem
	case w.linkProblem != "":
		return id() + ": " + w.linkProblem
	}
	return ""
}

// colString is firstString over the column attributes at idx.
func (w *wireSpan) colString(idx ...int) []byte {
	for _, i := range idx {
		if c := &w.cols[i]; c.seen && len(c.str) > 0 {
			return c.str
		}
	}
	return nil
}

// colInt is firstInt over the column attributes at idx.
func (w *wireSpan) colInt(idx ...int) int64 {
	for _, i := range idx {
		c := &w.cols[i]
		if !c.hasNumber {
			continue
		}
		v := c.i
		if !c.isInt {
			v = int64(c.f)
		}
		if v != 0 {
			return v
		}
	}
	return 0
}

// colFloat is firstFloat over the column attributes at idx.
func (w *wireSpan) colFloat(idx ...int) float64 {
	for _, i := range idx {
		c := &w.cols[i]
		if !c.hasNumber {
			continue
		}
		if c.isInt {
			return float64(c.i)
		}
		return c.f
	}
	return 0
}

// row builds the stored row of a valid span: spanRow's.
func (d *wireDecoder) row(w *wireSpan, service, resAgent, resExec string, rid int64) store.Span {
	row := store.Span{
		Namespace: d.src.Namespace,
		Name:      d.intern(w.name),
		Kind:      int(w.kind),
		Start:     int64(w.start),
		End:       int64(w.end),
		Status:    int(w.status),
		Service:   service,
		Tool:      d.intern(w.colString(attrWardenTool, attrGenAITool)),
		Model:     d.intern(w.colString(attrWardenModel, attrResponseModel, attrRequestModel)),
		Execution: d.intern(w.colString(attrWardenExecution, attrConversation)),
		Cost:      w.colFloat(attrWardenCost, attrUsageCost),
		Tokens:    w.colInt(attrInputTokens, attrPromptTokens) + w.colInt(attrOutputTokens, attrCompletionTokens),
		Resource:  rid,
	}
	if row.Tokens == 0 {
		row.Tokens = w.colInt(attrTotalTokens)
	}
	copy(row.TraceID[:], w.traceID)
	copy(row.SpanID[:], w.spanID)
	copy(row.ParentID[:], w.parentID)
	switch {
	case d.src.Agent != "":
		row.Agent = d.src.Agent
	default:
		row.Agent = d.intern(w.colString(attrWardenAgent, attrGenAIAgent))
		if row.Agent == "" {
			row.Agent = resAgent
		}
	}
	if row.Execution == "" {
		row.Execution = resExec
	}
	row.Data = d.spanData(w)
	return row
}

// spanData is spanData's encoding of what the columns do not hold, from
// the raw fields: the same bytes for a canonically encoded span.
func (d *wireDecoder) spanData(w *wireSpan) []byte {
	start := len(d.data)
	b := d.data
	if len(w.traceState) > 0 {
		b = protowire.AppendTag(b, fieldSpanTraceState, protowire.BytesType)
		b = protowire.AppendBytes(b, w.traceState)
	}
	for _, a := range w.attrs {
		b = protowire.AppendTag(b, fieldSpanAttributes, protowire.BytesType)
		b = protowire.AppendBytes(b, a)
	}
	if w.droppedAttrs != 0 {
		b = protowire.AppendTag(b, fieldSpanDroppedAttrs, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(w.droppedAttrs))
	}
	for _, e := range w.events {
		b = protowire.AppendTag(b, fieldSpanEvents, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	if w.droppedEvents != 0 {
		b = protowire.AppendTag(b, fieldSpanDroppedEvts, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(w.droppedEvents))
	}
	for _, l := range w.links {
		b = protowire.AppendTag(b, fieldSpanLinks, protowire.BytesType)
		b = protowire.AppendBytes(b, l)
	}
	if w.droppedLinks != 0 {
		b = protowire.AppendTag(b, fieldSpanDroppedLinks, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(w.droppedLinks))
	}
	if len(w.statusMessage) > 0 {
		b = protowire.AppendTag(b, fieldSpanStatus, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(fieldStatusMessage)+protowire.SizeBytes(len(w.statusMessage))))
		b = protowire.AppendTag(b, fieldStatusMessage, protowire.BytesType)
		b = protowire.AppendBytes(b, w.statusMessage)
	}
	if w.flags != 0 {
		b = protowire.AppendTag(b, fieldSpanFlags, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, w.flags)
	}
	d.data = b
	// Capped, so that a later append to one row's Data cannot overwrite
	// the next row's.
	return b[start:len(b):len(b)]
}
