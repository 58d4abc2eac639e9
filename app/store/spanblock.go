package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// Spans are stored in blocks (docs/trace.md): the spans of one trace that
// one write transaction stores, encoded compactly and compressed in one
// row, with one index row per distinct agent, tool, model and execution
// of the block. A block costs one row and a few index entries where a
// span of its own cost a row and up to five.

// Limits of one block: a trace's spans in one transaction beyond them go
// into further blocks, so that reading one block never needs more than
// a bounded buffer.
const (
	// MaxBlockSpans caps the spans of a block.
	MaxBlockSpans = 1024
	// MaxBlockBytes caps a block's encoded size before compression; a
	// single larger span gets a block of its own.
	MaxBlockBytes = 4 << 20
	// maxBlockDecoded bounds what a stored block may decompress to: one
	// span larger than MaxBlockBytes (at most a whole ingest request,
	// 16 MiB) with room to spare.
	maxBlockDecoded = 64 << 20
)

// Kinds of SpanKey: the columns a block is indexed by.
const (
	SpanKeyAgent     = 1
	SpanKeyTool      = 2
	SpanKeyModel     = 3
	SpanKeyExecution = 4
)

// SpanKey is one index entry of a block: a value of one of its spans.
type SpanKey struct {
	Kind  int
	Value string
}

// SpanBlock is what one span_blocks row holds, before compression: spans
// of one namespace and trace, with the range of their start times and the
// distinct values the block is indexed by.
type SpanBlock struct {
	Namespace          string
	TraceID            [16]byte
	MinStart, MaxStart int64
	Spans              []Span
	Keys               []SpanKey
}

// SpanBlocks groups spans into blocks: per namespace and trace, in the
// order the traces first appear, at most MaxBlockSpans spans and about
// MaxBlockBytes a block.
func SpanBlocks(spans []Span) []SpanBlock {
	type key struct {
		ns    string
		trace [16]byte
	}
	// open is the index in out of each trace's block being filled; the
	// first pass assigns the spans to blocks, the second copies them
	// into one array that the blocks share.
	open := map[key]int{}
	var sizes, counts []int
	var out []SpanBlock
	blockOf := make([]int, len(spans))
	for i := range spans {
		sp := &spans[i]
		k := key{sp.Namespace, sp.TraceID}
		n := spanEncodedSize(sp)
		j, ok := open[k]
		if ok && (counts[j] >= MaxBlockSpans || sizes[j]+n > MaxBlockBytes) {
			ok = false
		}
		if !ok {
			j = len(out)
			out = append(out, SpanBlock{Namespace: sp.Namespace, TraceID: sp.TraceID, MinStart: sp.Start, MaxStart: sp.Start})
			sizes, counts = append(sizes, 0), append(counts, 0)
			open[k] = j
		}
		b := &out[j]
		counts[j]++
		sizes[j] += n
		b.MinStart, b.MaxStart = min(b.MinStart, sp.Start), max(b.MaxStart, sp.Start)
		blockOf[i] = j
	}
	all := make([]Span, len(spans))
	off := 0
	for j := range out {
		out[j].Spans = all[off : off : off+counts[j]]
		off += counts[j]
	}
	for i := range spans {
		b := &out[blockOf[i]]
		b.Spans = append(b.Spans, spans[i])
	}
	for j := range out {
		out[j].Keys = BlockKeys(out[j].Spans)
	}
	return out
}

// BlockKeys returns the distinct index values of spans, sorted: the keys
// of a block holding them.
func BlockKeys(spans []Span) []SpanKey {
	var keys []SpanKey
	for i := range spans {
		sp := &spans[i]
		for _, k := range [...]SpanKey{{SpanKeyAgent, sp.Agent}, {SpanKeyTool, sp.Tool}, {SpanKeyModel, sp.Model}, {SpanKeyExecution, sp.Execution}} {
			if k.Value != "" {
				keys = append(keys, k)
			}
		}
	}
	slices.SortFunc(keys, func(a, b SpanKey) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Value, b.Value)) })
	return slices.Compact(keys)
}

// spanEncodedSize is about what a span takes in a block.
func spanEncodedSize(sp *Span) int {
	return 64 + len(sp.Name) + len(sp.Service) + len(sp.Agent) + len(sp.Tool) + len(sp.Model) + len(sp.Execution) + len(sp.Data)
}

// blockVersion is the first byte of an encoded block.
const blockVersion = 1

// Flags of a span in a block.
const (
	flagParent = 1 << iota
	flagCost
	flagTokens
)

// ErrBadBlock means a stored block does not decode.
var ErrBadBlock = errors.New("malformed span block")

// AppendSpanBlock appends the uncompressed encoding of spans (their
// namespace and trace id are the block's, not repeated) to dst.
func AppendSpanBlock(dst []byte, spans []Span) []byte {
	dst = append(dst, blockVersion)
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	var prev int64
	for i := range spans {
		sp := &spans[i]
		var flags byte
		if sp.ParentID != ([8]byte{}) {
			flags |= flagParent
		}
		if sp.Cost != 0 {
			flags |= flagCost
		}
		if sp.Tokens != 0 {
			flags |= flagTokens
		}
		dst = append(dst, flags)
		dst = append(dst, sp.SpanID[:]...)
		if flags&flagParent != 0 {
			dst = append(dst, sp.ParentID[:]...)
		}
		dst = appendString(dst, sp.Name)
		dst = binary.AppendUvarint(dst, uint64(sp.Kind))
		dst = binary.AppendVarint(dst, sp.Start-prev)
		prev = sp.Start
		dst = binary.AppendVarint(dst, sp.End-sp.Start)
		dst = binary.AppendUvarint(dst, uint64(sp.Status))
		for _, s := range [...]string{sp.Service, sp.Agent, sp.Tool, sp.Model, sp.Execution} {
			dst = appendString(dst, s)
		}
		if flags&flagCost != 0 {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(sp.Cost))
		}
		if flags&flagTokens != 0 {
			dst = binary.AppendVarint(dst, sp.Tokens)
		}
		dst = binary.AppendVarint(dst, sp.Resource)
		dst = binary.AppendUvarint(dst, uint64(len(sp.Data)))
		dst = append(dst, sp.Data...)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// blockReader reads an encoded block, failing on the first malformed
// field.
type blockReader struct {
	b   []byte
	err error
}

func (r *blockReader) fail() {
	if r.err == nil {
		r.err = ErrBadBlock
	}
	r.b = nil
}

func (r *blockReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *blockReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *blockReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *blockReader) str() string { return string(r.bytes(r.uvarint())) }

// DecodeSpanBlock decodes an uncompressed block of namespace and trace.
// The spans' Data alias b.
func DecodeSpanBlock(b []byte, namespace string, trace [16]byte) ([]Span, error) {
	if len(b) == 0 || b[0] != blockVersion {
		return nil, fmt.Errorf("%w: unknown version", ErrBadBlock)
	}
	r := &blockReader{b: b[1:]}
	n := r.uvarint()
	// Every span takes at least 20 bytes: a bound on the count before
	// allocating for it.
	if n > uint64(len(r.b))/20 {
		return nil, fmt.Errorf("%w: %d spans in %d bytes", ErrBadBlock, n, len(b))
	}
	out := make([]Span, 0, n)
	var prev int64
	for range n {
		sp := Span{Namespace: namespace, TraceID: trace}
		f := r.bytes(1)
		if r.err != nil {
			break
		}
		flags := f[0]
		if flags&^(flagParent|flagCost|flagTokens) != 0 {
			r.fail()
			break
		}
		copy(sp.SpanID[:], r.bytes(8))
		if flags&flagParent != 0 {
			copy(sp.ParentID[:], r.bytes(8))
		}
		sp.Name = r.str()
		sp.Kind = int(r.uvarint())
		sp.Start = prev + r.varint()
		prev = sp.Start
		sp.End = sp.Start + r.varint()
		sp.Status = int(r.uvarint())
		sp.Service, sp.Agent, sp.Tool, sp.Model, sp.Execution = r.str(), r.str(), r.str(), r.str(), r.str()
		if flags&flagCost != 0 {
			if c := r.bytes(8); len(c) == 8 {
				sp.Cost = math.Float64frombits(binary.LittleEndian.Uint64(c))
			}
		}
		if flags&flagTokens != 0 {
			sp.Tokens = r.varint()
		}
		sp.Resource = r.varint()
		sp.Data = r.bytes(r.uvarint())
		if r.err != nil {
			break
		}
		if sp.Data == nil {
			sp.Data = []byte{}
		}
		out = append(out, sp)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the last span", ErrBadBlock, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// SpanCodec compresses and decompresses blocks. It is safe for concurrent
// use; a driver keeps one and closes it with the store.
type SpanCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewSpanCodec returns a codec: zstd at its fastest level, which keeps
// compression a small part of a write, without entropy coding of the
// literals: a block's literals are mostly ids, which it hardly shrinks
// (blocks of `warden bench otlp` are 7 % larger without it, 81 bytes a
// span instead of 75), and trying it was a third of the encoder's
// processor time.
func NewSpanCodec() (*SpanCodec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithNoEntropyCompression(true))
	if err != nil {
		return nil, fmt.Errorf("span codec: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxBlockDecoded))
	if err != nil {
		return nil, fmt.Errorf("span codec: %w", err)
	}
	return &SpanCodec{enc: enc, dec: dec}, nil
}

// Close releases the codec's resources.
func (c *SpanCodec) Close() {
	_ = c.enc.Close()
	c.dec.Close()
}

// Encode returns the compressed encoding of a block's spans.
func (c *SpanCodec) Encode(spans []Span) []byte {
	raw := AppendSpanBlock(make([]byte, 0, 256*len(spans)), spans)
	return c.enc.EncodeAll(raw, make([]byte, 0, len(raw)/2))
}

// EncodedBlock is a block ready to be stored: a span_blocks row and its
// span_keys rows.
type EncodedBlock struct {
	Namespace          string
	TraceID            [16]byte
	MinStart, MaxStart int64
	// Spans is how many spans Data holds.
	Spans int
	Keys  []SpanKey
	Data  []byte
}

// EncodeBlocks groups spans into blocks (SpanBlocks) and encodes them.
func (c *SpanCodec) EncodeBlocks(spans []Span) []EncodedBlock {
	blocks := SpanBlocks(spans)
	out := make([]EncodedBlock, len(blocks))
	// One buffer for every block's encoding before compression.
	var raw []byte
	for i := range blocks {
		b := &blocks[i]
		raw = AppendSpanBlock(raw[:0], b.Spans)
		out[i] = EncodedBlock{Namespace: b.Namespace, TraceID: b.TraceID, MinStart: b.MinStart, MaxStart: b.MaxStart,
			Spans: len(b.Spans), Keys: b.Keys, Data: c.enc.EncodeAll(raw, make([]byte, 0, len(raw)/2))}
	}
	return out
}

// Decode returns the spans of a stored block of namespace and trace.
func (c *SpanCodec) Decode(data []byte, namespace string, trace [16]byte) ([]Span, error) {
	raw, err := c.dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	return DecodeSpanBlock(raw, namespace, trace)
}

// Match says whether sp passes f (everything but Limit and the order).
func (f *SpanFilter) Match(sp *Span) bool {
	if f.Namespaces != nil && !slices.Contains(f.Namespaces, sp.Namespace) {
		return false
	}
	if len(f.TraceIDs) > 0 && !slices.Contains(f.TraceIDs, sp.TraceID) {
		return false
	}
	for _, c := range [...]struct{ v, eq, ne string }{
		{sp.Execution, f.Execution, ""}, {sp.Agent, f.Agent, f.NotAgent}, {sp.Tool, f.Tool, f.NotTool},
		{sp.Model, f.Model, f.NotModel}, {sp.Service, f.Service, f.NotService}, {sp.Name, f.Name, f.NotName},
	} {
		if (c.eq != "" && c.v != c.eq) || (c.ne != "" && c.v == c.ne) {
			return false
		}
	}
	switch {
	case f.Status >= 0 && sp.Status != f.Status,
		f.Since != 0 && sp.Start < f.Since,
		f.Until != 0 && sp.Start >= f.Until:
		return false
	}
	if a := f.After; a != nil && !(sp.Start < a.Start || (sp.Start == a.Start && bytes.Compare(sp.SpanID[:], a.SpanID[:]) < 0)) {
		return false
	}
	return true
}

// SortSpans orders spans as f asks: by start time and span id, oldest
// first when f.Ascending, else newest first.
func (f *SpanFilter) SortSpans(spans []Span) {
	slices.SortFunc(spans, func(a, b Span) int {
		c := cmp.Or(cmp.Compare(a.Start, b.Start), bytes.Compare(a.SpanID[:], b.SpanID[:]))
		if f.Ascending {
			return c
		}
		return -c
	})
}

// BlockKeys returns the index entries a block must have to hold a span
// passing f: its equality filters on indexed columns.
func (f *SpanFilter) BlockKeys() []SpanKey {
	var out []SpanKey
	for _, k := range [...]SpanKey{{SpanKeyExecution, f.Execution}, {SpanKeyAgent, f.Agent}, {SpanKeyTool, f.Tool}, {SpanKeyModel, f.Model}} {
		if k.Value != "" {
			out = append(out, k)
		}
	}
	return out
}

// StoredBlock is one span_blocks row as read back.
type StoredBlock struct {
	ID                 int64
	Namespace          string
	TraceID            [16]byte
	MinStart, MaxStart int64
	Data               []byte
}

// BlockRows is what database/sql's and pgx's rows both offer.
type BlockRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanBlocks reads the rows of a SpanBlockList query.
func ScanBlocks(rows BlockRows) ([]StoredBlock, error) {
	var out []StoredBlock
	for rows.Next() {
		var b StoredBlock
		var trace []byte
		if err := rows.Scan(&b.ID, &b.Namespace, &trace, &b.MinStart, &b.MaxStart, &b.Data); err != nil {
			return nil, fmt.Errorf("scan span block: %w", err)
		}
		copy(b.TraceID[:], trace)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list span blocks: %w", err)
	}
	return out, nil
}

// BlockCursor is the position after the last block of a page, in the
// order of BlockPage.
type BlockCursor struct {
	// Start is the block's MaxStart (newest first) or MinStart (oldest
	// first).
	Start int64
	ID    int64
}

// BlockPage reads the next page of at most n blocks that may hold spans
// passing the filter, ordered by MaxStart then id descending (newest
// first) or MinStart then id ascending (f.Ascending), after cur (nil: the
// first page).
type BlockPage func(cur *BlockCursor, n int) ([]StoredBlock, error)

// blockPageSize is how many blocks one page query reads.
const blockPageSize = 64

// ListBlockSpans returns the spans passing f from the blocks page
// returns, in f's order, at most f.Limit. It reads pages until no later
// block can hold a span that sorts before the f.Limit-th found: a block
// holds no span newer than its MaxStart (older than its MinStart).
func ListBlockSpans(c *SpanCodec, f SpanFilter, page BlockPage) ([]Span, error) {
	var out []Span
	var cur *BlockCursor
	for {
		blocks, err := page(cur, blockPageSize)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks {
			spans, err := c.Decode(b.Data, b.Namespace, b.TraceID)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", b.ID, err)
			}
			// Kept in place: the spans of a trace's first block are the
			// answer's without a copy.
			kept := spans[:0]
			for i := range spans {
				if f.Match(&spans[i]) {
					kept = append(kept, spans[i])
				}
			}
			if out == nil {
				out = kept
			} else {
				out = append(out, kept...)
			}
		}
		if len(blocks) < blockPageSize {
			break
		}
		last := blocks[len(blocks)-1]
		cur = &BlockCursor{Start: last.MaxStart, ID: last.ID}
		if f.Ascending {
			cur.Start = last.MinStart
		}
		if f.Limit > 0 && len(out) >= f.Limit {
			f.SortSpans(out)
			out = out[:f.Limit]
			edge := out[f.Limit-1].Start
			if (!f.Ascending && edge > cur.Start) || (f.Ascending && edge < cur.Start) {
				return out, nil
			}
		}
	}
	f.SortSpans(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// MergeSpans merges the spans of the old per-span table with those of
// blocks, in f's order, at most f.Limit.
func MergeSpans(f SpanFilter, rows, blocks []Span) []Span {
	if len(rows) == 0 {
		return blocks
	}
	out := append(rows, blocks...)
	f.SortSpans(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out
}

// SummarizeTraces summarizes spans per trace as TraceSummaryList answers:
// spans stored twice count once; the root is the span without a parent
// (the first by name when there are several).
func SummarizeTraces(spans []Span) []TraceSummary {
	type acc struct {
		TraceSummary
		seen, errs map[[8]byte]bool
		root       bool
	}
	by := map[[16]byte]*acc{}
	var order [][16]byte
	for i := range spans {
		sp := &spans[i]
		a := by[sp.TraceID]
		if a == nil {
			a = &acc{TraceSummary: TraceSummary{TraceID: sp.TraceID, Start: sp.Start, End: sp.End}, seen: map[[8]byte]bool{}, errs: map[[8]byte]bool{}}
			by[sp.TraceID] = a
			order = append(order, sp.TraceID)
		}
		a.seen[sp.SpanID] = true
		if sp.Status == SpanStatusError {
			a.errs[sp.SpanID] = true
		}
		a.Start, a.End = min(a.Start, sp.Start), max(a.End, sp.End)
		if sp.ParentID == ([8]byte{}) {
			if !a.root || sp.Name < a.Root {
				a.Root = sp.Name
			}
			if !a.root || sp.Service < a.Service {
				a.Service = sp.Service
			}
			a.root = true
		}
	}
	out := make([]TraceSummary, 0, len(order))
	for _, id := range order {
		a := by[id]
		a.Spans, a.Errors = len(a.seen), len(a.errs)
		out = append(out, a.TraceSummary)
	}
	return out
}
