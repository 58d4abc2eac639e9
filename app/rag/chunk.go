package rag

import (
	"unicode"
	"unicode/utf8"
)

// Chunking defaults, as the RAGIndex schema documents them.
const (
	DefaultChunkSize    = 800
	DefaultChunkOverlap = 100
	// MaxChunkSize bounds spec.chunking.size, so one chunk stays a
	// reasonable unit of retrieval and embedding.
	MaxChunkSize = 16000
)

// Piece is one chunk of a document: its text and rune offsets.
type Piece struct {
	Text       string
	Start, End int
}

// Chunk splits text into pieces of at most size runes, each starting
// overlap runes before the previous one ended. A piece ends at the last
// whitespace of its window when there is one in its second half, so words
// are not cut; otherwise it is cut at size. Sizes below 1 mean
// DefaultChunkSize; an overlap outside [0, size) is clamped. Pieces that
// are only whitespace are dropped. The pieces cover the whole text.
func Chunk(text string, size, overlap int) []Piece {
	if size < 1 {
		size = DefaultChunkSize
	}
	if size > MaxChunkSize {
		size = MaxChunkSize
	}
	if overlap < 0 {
		overlap = 0
	}
	if overlap >= size {
		overlap = size - 1
	}
	if !utf8.ValidString(text) {
		text = toValidUTF8(text)
	}
	runes := []rune(text)
	var out []Piece
	for start := 0; start < len(runes); {
		end := start + size
		if end >= len(runes) {
			end = len(runes)
		} else if cut := lastSpace(runes[start:end]); cut > size/2 {
			end = start + cut
		}
		if !blank(runes[start:end]) {
			out = append(out, Piece{Text: string(runes[start:end]), Start: start, End: end})
		}
		if end == len(runes) {
			break
		}
		next := end - overlap
		if next <= start {
			next = start + 1
		}
		start = next
	}
	return out
}

// lastSpace returns the index just after the last whitespace rune of rs,
// 0 when it has none.
func lastSpace(rs []rune) int {
	for i := len(rs) - 1; i > 0; i-- {
		if unicode.IsSpace(rs[i]) {
			return i + 1
		}
	}
	return 0
}

func blank(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func toValidUTF8(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r)
	}
	return string(out)
}
