package store_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func blockSpans() []store.Span {
	trace := [16]byte{1, 2, 3}
	return []store.Span{
		{Namespace: "default", TraceID: trace, SpanID: [8]byte{1}, Name: "invoke_agent support-bot", Kind: 2, Start: 1_800_000_000_000_000_000,
			End: 1_800_000_001_000_000_000, Service: "agents", Agent: "support-bot", Execution: "exec-1", Resource: 42, Data: []byte{0x0a, 0x01, 'x'}},
		{Namespace: "default", TraceID: trace, SpanID: [8]byte{2}, ParentID: [8]byte{1}, Name: "execute_tool crm.get", Kind: 1,
			Start: 1_799_999_999_000_000_000, End: 1_800_000_000_500_000_000, Status: store.SpanStatusError, Agent: "support-bot", Tool: "crm.get",
			Cost: 0.0021, Tokens: 1020, Resource: -7, Data: []byte{}},
		{Namespace: "default", TraceID: trace, SpanID: [8]byte{3}, ParentID: [8]byte{1}, Name: "chat gpt-4o", Start: 1, End: 1, Agent: "support-bot",
			Model: "gpt-4o", Tokens: -1, Cost: -0.5, Data: []byte{}},
	}
}

// TestSpanCodecRoundTrip stores every field of a span and gives it back.
func TestSpanCodecRoundTrip(t *testing.T) {
	t.Parallel()
	c, err := store.NewSpanCodec()
	require.NoError(t, err)
	t.Cleanup(c.Close)
	spans := blockSpans()
	blocks := c.EncodeBlocks(spans)
	require.Len(t, blocks, 1)
	b := blocks[0]
	require.Equal(t, 3, b.Spans)
	require.Equal(t, int64(1), b.MinStart)
	require.Equal(t, spans[0].Start, b.MaxStart)
	require.Equal(t, []store.SpanKey{{Kind: store.SpanKeyAgent, Value: "support-bot"}, {Kind: store.SpanKeyTool, Value: "crm.get"},
		{Kind: store.SpanKeyModel, Value: "gpt-4o"}, {Kind: store.SpanKeyExecution, Value: "exec-1"}}, b.Keys, "one key per distinct value")
	got, err := c.Decode(b.Data, b.Namespace, b.TraceID)
	require.NoError(t, err)
	require.Equal(t, spans, got)

	_, err = c.Decode(b.Data[:len(b.Data)-3], b.Namespace, b.TraceID)
	require.ErrorIs(t, err, store.ErrBadBlock, "a truncated block is an error, not a short list")
}

// TestSpanBlocksSplit puts each namespace and trace in its own block and
// starts a new block past MaxBlockSpans.
func TestSpanBlocksSplit(t *testing.T) {
	t.Parallel()
	var spans []store.Span
	for i := range store.MaxBlockSpans + 1 {
		spans = append(spans, store.Span{Namespace: "default", TraceID: [16]byte{1}, SpanID: [8]byte{byte(i), byte(i >> 8)}, Start: int64(i)})
	}
	spans = append(spans, store.Span{Namespace: "other", TraceID: [16]byte{1}, Start: 5}, store.Span{Namespace: "default", TraceID: [16]byte{2}, Start: 6})
	blocks := store.SpanBlocks(spans)
	require.Len(t, blocks, 4)
	require.Len(t, blocks[0].Spans, store.MaxBlockSpans)
	require.Len(t, blocks[1].Spans, 1, "the span past the limit")
	require.Equal(t, [16]byte{1}, blocks[1].TraceID)
	require.Equal(t, "other", blocks[2].Namespace)
	require.Equal(t, [16]byte{2}, blocks[3].TraceID)
}

// FuzzDecodeSpanBlock: any bytes decode to spans or ErrBadBlock, never a
// panic, and what decodes encodes back to the same bytes.
func FuzzDecodeSpanBlock(f *testing.F) {
	f.Add(store.AppendSpanBlock(nil, blockSpans()))
	f.Add(store.AppendSpanBlock(nil, nil))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		spans, err := store.DecodeSpanBlock(b, "ns", [16]byte{9})
		if err != nil {
			require.True(t, errors.Is(err, store.ErrBadBlock), "%v", err)
			return
		}
		enc := store.AppendSpanBlock(nil, spans)
		again, err := store.DecodeSpanBlock(enc, "ns", [16]byte{9})
		require.NoError(t, err)
		require.Len(t, again, len(spans))
		// Compared encoded: a NaN cost is not equal to itself.
		require.Equal(t, enc, store.AppendSpanBlock(nil, again))
	})
}

// FuzzSpanCodecDecode: a stored block that is not valid zstd, or that
// decompresses to garbage, is ErrBadBlock.
func FuzzSpanCodecDecode(f *testing.F) {
	c, err := store.NewSpanCodec()
	require.NoError(f, err)
	f.Cleanup(c.Close)
	f.Add(c.Encode(blockSpans()))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := c.Decode(b, "ns", [16]byte{9}); err != nil {
			require.ErrorIs(t, err, store.ErrBadBlock)
		}
	})
}
