package trace

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/warden-dev/warden/app/store"

	"github.com/warden-dev/warden/app/resource"
)

// The query API's span answers are written here straight from the stored
// rows: the OTLP protobuf of a span's attributes, events and links is
// walked once and written as JSON, without building OTLP messages,
// SpanViews and attribute maps and without encoding/json's reflection.
// The bytes are those json.Marshal writes for the same SpanViews (field
// order, map keys sorted, HTML-safe escaping, number and time formats);
// render_test.go compares the two. A span whose stored form holds
// anything the walk does not reproduce exactly (a malformed or unusual
// encoding, a value JSON cannot hold) is written by the reference path
// instead: rebuild, view and json.Marshal, errors included.

// errSlowPath sends one span to the reference path.
var errSlowPath = errors.New("span needs the reference encoder")

// maxAttrDepth is the deepest nesting anyJSON renders.
const maxAttrDepth = 16

// OTLP field numbers of the messages walked.
const (
	fSpanTraceState = 3
	fSpanName       = 5
	fSpanAttributes = 9
	fSpanEvents     = 11
	fSpanLinks      = 13
	fSpanStatus     = 15

	fStatusMessage = 2

	fEventTime       = 1
	fEventName       = 2
	fEventAttributes = 3

	fLinkTraceID    = 1
	fLinkSpanID     = 2
	fLinkTraceState = 3
	fLinkAttributes = 4

	fKVKey   = 1
	fKVValue = 2

	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	fAnyKVList = 6
	fAnyBytes  = 7

	fListValues = 1
)

// attrKV is one KeyValue of an attribute list: its key and its AnyValue's
// encoding (nil when it has none).
type attrKV struct {
	key, val []byte
	hasVal   bool
	// raw is the KeyValue's encoding; pair its rendered `"key":value`
	// when an earlier span of the answer had the same attribute.
	raw, pair []byte
}

// renderedPair is a top-level attribute written once in an answer: its
// key (for sorting) and its `"key":value`.
type renderedPair struct {
	key, pair []byte
}

// maxPairs bounds the attributes an answer keeps rendered.
const maxPairs = 4096

// spanWriter writes span answers. It keeps scratch space between spans
// and is used by one request at a time.
type spanWriter struct {
	resources map[int64]*tracepb.ResourceSpans
	// tails holds each resource's rendered `,"resource":…,"scope":…`.
	tails map[int64][]byte
	// raw and kvs are per-depth scratch lists of KeyValue encodings and
	// their parsed form; events and links those of the span being written.
	raw       [maxAttrDepth + 2][][]byte
	kvs       [maxAttrDepth + 2][]attrKV
	events    [][]byte
	links     [][]byte
	evAttrs   [][]byte
	statusMsg []byte
	// second is the Unix second whose text (`"2006-01-02T15:04:05`)
	// secondText holds.
	second     int64
	haveSecond bool
	secondText []byte
	// pairs holds the top-level attributes (of spans, events and links)
	// already written, by encoding: the spans of a trace repeat most of
	// theirs (its agent, service, operation names).
	pairs map[string]renderedPair
}

func newSpanWriter(resources map[int64]*tracepb.ResourceSpans) *spanWriter {
	return &spanWriter{resources: resources, tails: make(map[int64][]byte, len(resources)), pairs: map[string]renderedPair{}}
}

// appendTraceJSON appends the answer of GET /v1/traces/{id}, the JSON of
// Trace, to dst.
func (w *spanWriter) appendTraceJSON(dst []byte, traceID string, rows []store.Span, truncated bool) ([]byte, error) {
	dst = append(dst, `{"traceId":`...)
	dst = resource.AppendJSONString(dst, traceID)
	dst = append(dst, `,"spans":`...)
	dst, err := w.appendSpans(dst, rows)
	if err != nil {
		return dst, err
	}
	if truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	return append(dst, '}'), nil
}

// appendSpanListJSON appends the answer of GET /v1/spans, the JSON of
// SpanList, to dst.
func (w *spanWriter) appendSpanListJSON(dst []byte, cont string, rows []store.Span) ([]byte, error) {
	dst = append(dst, `{"kind":"SpanList","metadata":{`...)
	if cont != "" {
		dst = append(dst, `"continue":`...)
		dst = resource.AppendJSONString(dst, cont)
	}
	dst = append(dst, `},"items":`...)
	dst, err := w.appendSpans(dst, rows)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendSpans appends the JSON array of rows' SpanViews.
func (w *spanWriter) appendSpans(dst []byte, rows []store.Span) ([]byte, error) {
	dst = append(dst, '[')
	for i := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = w.appendSpan(dst, &rows[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendSpan appends the JSON of row's SpanView.
func (w *spanWriter) appendSpan(dst []byte, row *store.Span) ([]byte, error) {
	start := len(dst)
	out, err := w.appendSpanDirect(dst, row)
	if err == nil {
		return out, nil
	}
	dst = out[:start]
	sp, err := rebuild(row)
	if err != nil {
		return dst, err
	}
	b, err := json.Marshal(view(row, sp, w.resources[row.Resource]))
	if err != nil {
		return dst, fmt.Errorf("encode span %x: %w", row.SpanID, err)
	}
	return append(dst, b...), nil
}

// appendSpanDirect writes row's SpanView from the stored encoding; on an
// error (errSlowPath, or a resource JSON cannot hold) the reference path
// writes the span, and reports the error if there is one.
func (w *spanWriter) appendSpanDirect(dst []byte, row *store.Span) ([]byte, error) {
	if err := w.scanSpanData(row.Data); err != nil {
		return dst, err
	}
	kind, ok := kindJSON[int(int32(row.Kind))]
	if !ok {
		kind = `""`
	}
	status, ok := statusJSON[row.Status]
	if !ok {
		status = `""`
	}
	dst = append(dst, `{"traceId":"`...)
	dst = hex.AppendEncode(dst, row.TraceID[:])
	dst = append(dst, `","spanId":"`...)
	dst = hex.AppendEncode(dst, row.SpanID[:])
	dst = append(dst, '"')
	if row.ParentID != ([8]byte{}) {
		dst = append(dst, `,"parentSpanId":"`...)
		dst = hex.AppendEncode(dst, row.ParentID[:])
		dst = append(dst, '"')
	}
	dst = append(dst, `,"name":`...)
	dst = resource.AppendJSONString(dst, row.Name)
	dst = append(dst, `,"kind":`...)
	dst = append(dst, kind...)
	dst = append(dst, `,"startTime":`...)
	dst = w.appendTime(dst, row.Start)
	dst = append(dst, `,"endTime":`...)
	dst = w.appendTime(dst, row.End)
	dst = append(dst, `,"durationMs":`...)
	dst, ok = appendJSONFloat(dst, float64(row.End-row.Start)/1e6)
	if !ok {
		return dst, errSlowPath
	}
	dst = append(dst, `,"status":{"code":`...)
	dst = append(dst, status...)
	if len(w.statusMsg) > 0 {
		dst = append(dst, `,"message":`...)
		dst = resource.AppendJSONString(dst, w.statusMsg)
	}
	dst = append(dst, `},"namespace":`...)
	dst = resource.AppendJSONString(dst, row.Namespace)
	for _, f := range [...]struct{ name, v string }{
		{`,"service":`, row.Service}, {`,"agent":`, row.Agent}, {`,"tool":`, row.Tool}, {`,"model":`, row.Model}, {`,"execution":`, row.Execution},
	} {
		if f.v != "" {
			dst = append(dst, f.name...)
			dst = resource.AppendJSONString(dst, f.v)
		}
	}
	if row.Cost != 0 {
		dst = append(dst, `,"cost":`...)
		if dst, ok = appendJSONFloat(dst, row.Cost); !ok {
			return dst, errSlowPath
		}
	}
	if row.Tokens != 0 {
		dst = append(dst, `,"tokens":`...)
		dst = strconv.AppendInt(dst, row.Tokens, 10)
	}
	var err error
	if len(w.raw[0]) > 0 {
		dst = append(dst, `,"attributes":`...)
		if dst, err = w.appendKVs(dst, w.raw[0], 0); err != nil {
			return dst, err
		}
	}
	if len(w.events) > 0 {
		dst = append(dst, `,"events":[`...)
		for i, ev := range w.events {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = w.appendEvent(dst, ev); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	if len(w.links) > 0 {
		dst = append(dst, `,"links":[`...)
		for i, l := range w.links {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = w.appendLink(dst, l); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	tail, err := w.tail(row.Resource)
	if err != nil {
		return dst, err
	}
	dst = append(dst, tail...)
	return append(dst, '}'), nil
}

// scanSpanData walks the top level of a stored span's encoding, keeping
// the encodings of its attributes, events and links and its status
// message in w.
func (w *spanWriter) scanSpanData(b []byte) error {
	w.raw[0], w.events, w.links = w.raw[0][:0], w.events[:0], w.links[:0]
	w.statusMsg = nil
	seenStatus := false
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case fSpanTraceState, fSpanName:
			if !utf8.Valid(v) {
				return errSlowPath
			}
		case fSpanAttributes:
			w.raw[0] = append(w.raw[0], v)
		case fSpanEvents:
			w.events = append(w.events, v)
		case fSpanLinks:
			w.links = append(w.links, v)
		case fSpanStatus:
			if seenStatus {
				return errSlowPath // a repeated message field merges
			}
			seenStatus = true
			if err := w.scanStatus(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *spanWriter) scanStatus(b []byte) error {
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if num == fStatusMessage && typ == protowire.BytesType {
			if !utf8.Valid(v) {
				return errSlowPath
			}
			w.statusMsg = v
		}
	}
	return nil
}

// appendEvent appends the JSON of a SpanEvent from its encoding.
func (w *spanWriter) appendEvent(dst []byte, b []byte) ([]byte, error) {
	var name []byte
	var ts uint64
	w.evAttrs = w.evAttrs[:0]
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		switch {
		case num == fEventTime && typ == protowire.Fixed64Type:
			ts = binary.LittleEndian.Uint64(v)
		case num == fEventName && typ == protowire.BytesType:
			if !utf8.Valid(v) {
				return dst, errSlowPath
			}
			name = v
		case num == fEventAttributes && typ == protowire.BytesType:
			w.evAttrs = append(w.evAttrs, v)
		}
	}
	dst = append(dst, `{"name":`...)
	dst = resource.AppendJSONString(dst, name)
	dst = append(dst, `,"time":`...)
	dst = w.appendTime(dst, int64(ts))
	if len(w.evAttrs) > 0 {
		dst = append(dst, `,"attributes":`...)
		var err error
		if dst, err = w.appendKVs(dst, w.evAttrs, 0); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendLink appends the JSON of a SpanLink from its encoding.
func (w *spanWriter) appendLink(dst []byte, b []byte) ([]byte, error) {
	var traceID, spanID []byte
	w.evAttrs = w.evAttrs[:0]
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case fLinkTraceID:
			traceID = v
		case fLinkSpanID:
			spanID = v
		case fLinkTraceState:
			if !utf8.Valid(v) {
				return dst, errSlowPath
			}
		case fLinkAttributes:
			w.evAttrs = append(w.evAttrs, v)
		}
	}
	dst = append(dst, `{"traceId":"`...)
	dst = hex.AppendEncode(dst, traceID)
	dst = append(dst, `","spanId":"`...)
	dst = hex.AppendEncode(dst, spanID)
	dst = append(dst, '"')
	if len(w.evAttrs) > 0 {
		dst = append(dst, `,"attributes":`...)
		var err error
		if dst, err = w.appendKVs(dst, w.evAttrs, 0); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendKVs appends a JSON object of KeyValue encodings, as attrMap and
// encoding/json write it: keys sorted. Two values of one key go to the
// reference path (the map keeps the last; its encoding must still be
// checked).
func (w *spanWriter) appendKVs(dst []byte, raw [][]byte, depth int) ([]byte, error) {
	kvs := w.kvs[depth][:0]
	for _, b := range raw {
		if depth == 0 {
			if p, ok := w.pairs[string(b)]; ok {
				kvs = append(kvs, attrKV{key: p.key, pair: p.pair})
				continue
			}
		}
		kv, err := parseKV(b)
		if err != nil {
			return dst, err
		}
		kv.raw = b
		kvs = append(kvs, kv)
	}
	w.kvs[depth] = kvs
	sortKVs(kvs)
	dst = append(dst, '{')
	for i := range kvs {
		kv := &kvs[i]
		if i > 0 {
			if bytes.Equal(kvs[i-1].key, kv.key) {
				return dst, errSlowPath
			}
			dst = append(dst, ',')
		}
		if kv.pair != nil {
			dst = append(dst, kv.pair...)
			continue
		}
		start := len(dst)
		dst = resource.AppendJSONString(dst, kv.key)
		dst = append(dst, ':')
		var err error
		if dst, err = w.appendAny(dst, kv.val, depth); err != nil {
			return dst, err
		}
		// A top-level attribute renders the same wherever it is.
		if depth == 0 && len(w.pairs) < maxPairs {
			b := make([]byte, 0, len(kv.key)+len(dst)-start)
			b = append(append(b, kv.key...), dst[start:]...)
			w.pairs[string(kv.raw)] = renderedPair{key: b[:len(kv.key):len(kv.key)], pair: b[len(kv.key):]}
		}
	}
	return append(dst, '}'), nil
}

// sortKVs sorts kvs by key: by insertion when short, as attribute lists
// mostly are.
func sortKVs(kvs []attrKV) {
	if len(kvs) > 16 {
		slices.SortStableFunc(kvs, func(a, b attrKV) int { return bytes.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(kvs); i++ {
		for j := i; j > 0 && string(kvs[j].key) < string(kvs[j-1].key); j-- {
			kvs[j], kvs[j-1] = kvs[j-1], kvs[j]
		}
	}
}

// parseKV parses a KeyValue.
func parseKV(b []byte) (attrKV, error) {
	var kv attrKV
	seenKey := false
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return kv, err
		}
		b = rest
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case fKVKey:
			if seenKey || !utf8.Valid(v) {
				return kv, errSlowPath
			}
			kv.key, seenKey = v, true
		case fKVValue:
			if kv.hasVal {
				return kv, errSlowPath // a repeated message field merges
			}
			kv.val, kv.hasVal = v, true
		}
	}
	return kv, nil
}

// appendAny appends the JSON of an AnyValue encoding at depth, as
// anyJSON renders it.
func (w *spanWriter) appendAny(dst []byte, b []byte, depth int) ([]byte, error) {
	if depth > maxAttrDepth {
		return dst, errSlowPath
	}
	var (
		which int
		val   []byte
		u     uint64
	)
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		var want protowire.Type
		switch num {
		case fAnyString, fAnyArray, fAnyKVList, fAnyBytes:
			want = protowire.BytesType
		case fAnyBool, fAnyInt:
			want = protowire.VarintType
		case fAnyDouble:
			want = protowire.Fixed64Type
		default:
			continue
		}
		if typ != want {
			continue // a field of the wrong type is an unknown field
		}
		if which != 0 {
			return dst, errSlowPath // the oneof keeps the last; messages merge
		}
		which, val = int(num), v
		if typ == protowire.VarintType {
			u, _ = protowire.ConsumeVarint(v)
		} else if typ == protowire.Fixed64Type {
			u = binary.LittleEndian.Uint64(v)
		}
	}
	switch which {
	case 0:
		return append(dst, "null"...), nil
	case fAnyString:
		if !utf8.Valid(val) {
			return dst, errSlowPath
		}
		return resource.AppendJSONString(dst, val), nil
	case fAnyBool:
		if u != 0 {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case fAnyInt:
		return strconv.AppendInt(dst, int64(u), 10), nil
	case fAnyDouble:
		out, ok := appendJSONFloat(dst, math.Float64frombits(u))
		if !ok {
			return dst, errSlowPath
		}
		return out, nil
	case fAnyBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, val)
		return append(dst, '"'), nil
	case fAnyArray:
		return w.appendArray(dst, val, depth)
	default: // fAnyKVList
		raw := w.raw[depth+1][:0]
		for b := val; len(b) > 0; {
			num, typ, v, rest, err := nextField(b)
			if err != nil {
				return dst, err
			}
			b = rest
			if num == fListValues && typ == protowire.BytesType {
				raw = append(raw, v)
			}
		}
		w.raw[depth+1] = raw
		return w.appendKVs(dst, raw, depth+1)
	}
}

// appendArray appends the JSON array of an ArrayValue encoding.
func (w *spanWriter) appendArray(dst []byte, b []byte, depth int) ([]byte, error) {
	dst = append(dst, '[')
	n := 0
	for len(b) > 0 {
		num, typ, v, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		if num != fListValues || typ != protowire.BytesType {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if dst, err = w.appendAny(dst, v, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// nextField reads one field of a protobuf encoding: its number, type and
// value (the payload of a length-delimited field, the 8 or 4 bytes of a
// fixed one, the varint's bytes) and what follows. A malformed encoding
// is errSlowPath: the reference decoder reports it.
func nextField(b []byte) (protowire.Number, protowire.Type, []byte, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num > protowire.MaxValidNumber {
		return 0, 0, nil, nil, errSlowPath
	}
	b = b[n:]
	var v []byte
	switch typ {
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	case protowire.VarintType, protowire.Fixed64Type, protowire.Fixed32Type:
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n >= 0 {
			v = b[:n]
		}
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return 0, 0, nil, nil, errSlowPath
	}
	return num, typ, v, b[n:], nil
}

// tail returns the rendered resource and scope of a resource id, with a
// leading comma, or nothing when neither is shown.
func (w *spanWriter) tail(id int64) ([]byte, error) {
	if t, ok := w.tails[id]; ok {
		return t, nil
	}
	var v SpanView
	if res := w.resources[id]; res != nil {
		v = view(&store.Span{}, &tracepb.Span{}, res)
	}
	b, err := json.Marshal(struct {
		Resource map[string]any `json:"resource,omitempty"`
		Scope    *Scope         `json:"scope,omitempty"`
	}{v.Resource, v.Scope})
	if err != nil {
		return nil, fmt.Errorf("encode span resource %d: %w", id, err)
	}
	var t []byte
	if len(b) > 2 {
		t = append([]byte{','}, b[1:len(b)-1]...)
	}
	w.tails[id] = t
	return t, nil
}

// kindJSON and statusJSON are the quoted names of span kinds and status
// codes.
var (
	kindJSON   = quoteNames(kindNames)
	statusJSON = quoteNames(statusNames)
)

func quoteNames[K ~int32 | ~int](names map[K]string) map[int]string {
	out := make(map[int]string, len(names))
	for k, v := range names {
		out[int(k)] = strconv.Quote(v)
	}
	return out
}

// appendTime appends a time (Unix nanoseconds) as encoding/json writes a
// UTC time.Time: RFC 3339 with the nanoseconds' trailing zeros dropped.
// The spans of a trace mostly share their second, whose text is kept.
func (w *spanWriter) appendTime(dst []byte, ns int64) []byte {
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	if !w.haveSecond || sec != w.second {
		w.second, w.haveSecond = sec, true
		w.secondText = time.Unix(sec, 0).UTC().AppendFormat(w.secondText[:0], `"2006-01-02T15:04:05`)
	}
	dst = append(dst, w.secondText...)
	if frac != 0 {
		var digits [10]byte
		digits[0] = '.'
		for i := 9; i > 0; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 10
		for digits[n-1] == '0' {
			n--
		}
		dst = append(dst, digits[:n]...)
	}
	return append(dst, 'Z', '"')
}

// appendJSONFloat appends f as encoding/json writes a float64; false for
// NaN and infinities, which it refuses.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}
