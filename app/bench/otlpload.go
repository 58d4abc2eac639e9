package bench

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The load generator of `bench otlp` replays prepared exports, as a load
// generator does, so that the senders, in the same process and on the
// same cores as the service, cost little: before the clock starts it
// builds and encodes exportTemplates distinct exports (benchRequest's
// agent traces) and notes where each span's ids, times and execution
// are in the bytes. A sender then copies a template, writes into it a
// new export number (the trace ids, span and parent ids and executions
// of every export are its own) and the current time, and sends the bytes
// as they are (sendCodec). The service does all its work on them: it
// receives, authenticates, decodes and checks them, converts and stores
// the spans and commits before it answers.

// exportTemplates is the number of distinct prepared exports: benchRequest
// rotates the tools by 512 mod 50 an export, and 25 exports make a whole
// rotation.
const exportTemplates = 25

// spanPatch is where one span's fields are in a template, as offsets of
// their values; parent and exec are -1 when the span has none.
type spanPatch struct {
	traceID, spanID, parent, start, end, exec int
	// execNum is the template's execution number.
	execNum uint64
}

// exportTemplate is one encoded export and its spans' offsets.
type exportTemplate struct {
	b     []byte
	spans []spanPatch
	// now is the time its spans' times are relative to.
	now uint64
}

// execWidth is the width of an execution's number in a template.
const execWidth = 16

// newExportTemplate builds the template of an export of n spans: that of
// benchRequest(n, seq) with ids the patch replaces: trace ids of
// (0, trace number), span ids their index in the export plus one.
func newExportTemplate(n int, seq uint64) (*exportTemplate, error) {
	if n >= 1<<16 {
		return nil, fmt.Errorf("an export of %d spans is too large to prepare", n)
	}
	req := benchRequest(n, seq)
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	for i, sp := range spans {
		tid := make([]byte, 16)
		binary.BigEndian.PutUint64(tid[8:], uint64(i/8)+1)
		sp.TraceId = tid
		sp.SpanId = binary.BigEndian.AppendUint64(nil, uint64(i)+1)
		if i%8 != 0 {
			sp.ParentSpanId = binary.BigEndian.AppendUint64(nil, uint64(i/8*8)+1)
		}
		for _, kv := range sp.Attributes {
			if kv.Key == "warden.execution" {
				kv.Value = kvs("v", fmt.Sprintf("exec-%0*x", execWidth, i/8))[0].Value
			}
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode an export: %w", err)
	}
	// benchRequest's spans start 5 ms before its now.
	t := &exportTemplate{b: b, now: spans[0].StartTimeUnixNano + 5e6}
	if t.spans, err = spanOffsets(b); err != nil {
		return nil, err
	}
	if len(t.spans) != n {
		return nil, fmt.Errorf("found %d of the %d spans of a prepared export", len(t.spans), n)
	}
	for i := range t.spans {
		if p := &t.spans[i]; p.exec >= 0 {
			var num [8]byte
			if _, err := hex.Decode(num[:], b[p.exec:p.exec+execWidth]); err != nil {
				return nil, fmt.Errorf("read a prepared execution: %w", err)
			}
			p.execNum = binary.BigEndian.Uint64(num[:])
		}
	}
	return t, nil
}

// spanOffsets walks an encoded ExportTraceServiceRequest and returns
// where its spans' fields are.
func spanOffsets(b []byte) ([]spanPatch, error) {
	var out []spanPatch
	// fields calls fn with each field of the message at b[off:end].
	fields := func(off, end int, fn func(num protowire.Number, typ protowire.Type, voff, vend int) error) error {
		for off < end {
			num, typ, n := protowire.ConsumeTag(b[off:end])
			if n < 0 {
				return protowire.ParseError(n)
			}
			off += n
			voff := off
			if typ == protowire.BytesType {
				v, n := protowire.ConsumeBytes(b[off:end])
				if n < 0 {
					return protowire.ParseError(n)
				}
				voff = off + n - len(v)
				off += n
			} else {
				n := protowire.ConsumeFieldValue(num, typ, b[off:end])
				if n < 0 {
					return protowire.ParseError(n)
				}
				off += n
			}
			if err := fn(num, typ, voff, off); err != nil {
				return err
			}
		}
		return nil
	}
	// Request 1: ResourceSpans; 2: ScopeSpans; 2: Span.
	span := func(voff, vend int) error {
		p := spanPatch{traceID: -1, spanID: -1, parent: -1, start: -1, end: -1, exec: -1}
		err := fields(voff, vend, func(num protowire.Number, _ protowire.Type, o, e int) error {
			switch num {
			case 1:
				p.traceID = o
			case 2:
				p.spanID = o
			case 4:
				p.parent = o
			case 7:
				p.start = e - 8
			case 8:
				p.end = e - 8
			case 9: // KeyValue: 1 key, 2 AnyValue: 1 string
				var key string
				return fields(o, e, func(num protowire.Number, _ protowire.Type, o, e int) error {
					switch num {
					case 1:
						key = string(b[o:e])
					case 2:
						if key == "warden.execution" {
							return fields(o, e, func(num protowire.Number, _ protowire.Type, o, e int) error {
								if num == 1 && e-o == len("exec-")+execWidth {
									p.exec = o + len("exec-")
								}
								return nil
							})
						}
					}
					return nil
				})
			}
			return nil
		})
		if p.traceID < 0 || p.spanID < 0 || p.start < 0 || p.end < 0 {
			return errors.New("a prepared span lacks an id or a time")
		}
		out = append(out, p)
		return err
	}
	err := fields(0, len(b), func(num protowire.Number, _ protowire.Type, o, e int) error {
		if num != 1 {
			return nil
		}
		return fields(o, e, func(num protowire.Number, _ protowire.Type, o, e int) error {
			if num != 2 {
				return nil
			}
			return fields(o, e, func(num protowire.Number, _ protowire.Type, o, e int) error {
				if num != 2 {
					return nil
				}
				return span(o, e)
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read a prepared export: %w", err)
	}
	return out, nil
}

// fill writes into dst (the template's length) export number seq (from
// 1) of the template, its times shifted to now.
func (t *exportTemplate) fill(dst []byte, seq uint64, now time.Time) []byte {
	dst = append(dst[:0], t.b...)
	delta := uint64(now.UnixNano()) - t.now
	var hexBuf [execWidth]byte
	for _, p := range t.spans {
		// Trace ids (seq, trace number); span and parent ids (seq,
		// index in the export), never zero.
		binary.BigEndian.PutUint64(dst[p.traceID:], seq)
		binary.BigEndian.PutUint64(dst[p.spanID:], seq<<16|binary.BigEndian.Uint64(t.b[p.spanID:]))
		if p.parent >= 0 {
			binary.BigEndian.PutUint64(dst[p.parent:], seq<<16|binary.BigEndian.Uint64(t.b[p.parent:]))
		}
		binary.LittleEndian.PutUint64(dst[p.start:], binary.LittleEndian.Uint64(t.b[p.start:])+delta)
		binary.LittleEndian.PutUint64(dst[p.end:], binary.LittleEndian.Uint64(t.b[p.end:])+delta)
		if p.exec >= 0 {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], seq<<16|p.execNum)
			hex.Encode(hexBuf[:], n[:])
			copy(dst[p.exec:], hexBuf[:])
		}
	}
	return dst
}

// sendCodec sends an encoded export ([]byte) as it is and decodes the
// answer as protobuf: the senders' side only.
type sendCodec struct{}

func (sendCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("sendCodec sends []byte, not %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (sendCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

func (sendCodec) Name() string { return "proto" }
