package rag_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/rag"
)

// FuzzDecodeRetrieveRequest: the parser never panics, and what it accepts
// is a request the service can run.
func FuzzDecodeRetrieveRequest(f *testing.F) {
	for _, s := range []string{
		`{"query":"refund","topK":3}`,
		`{"index":"help","query":"x","filter":{"sources":["faq"],"metadata":{"team":"ops"}}}`,
		`{"query":""}`, `{}`, ``, `{"query":"a"} {}`, `{"topK":-1,"query":"q"}`, `[1,2]`, `{"query":"\u0000"}`,
		`{"index":"Bad","query":"q"}`, `{"query":"q","unknown":1}`,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "help")
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		req, err := rag.DecodeRetrieveRequest(body, path)
		if err != nil {
			return
		}
		if req.Index == "" || strings.TrimSpace(req.Query) == "" || len(req.Query) > rag.MaxQueryBytes || !utf8.ValidString(req.Query) {
			t.Fatalf("accepted an unusable request: %+v", req)
		}
		if req.TopK < 0 || req.TopK > rag.MaxTopK {
			t.Fatalf("accepted topK %d", req.TopK)
		}
		if path != "" && req.Index != path {
			t.Fatalf("index %q differs from the path's %q", req.Index, path)
		}
	})
}

// FuzzDecodeIndexRequest: the parser never panics and names an index
// whenever it accepts.
func FuzzDecodeIndexRequest(f *testing.F) {
	for _, s := range []string{`{"index":"help"}`, ``, `{}`, `{"index":"x","y":1}`, `null`, `{"index":"../x"}`} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "help")
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		req, err := rag.DecodeIndexRequest(body, path)
		if err == nil && req.Index == "" {
			t.Fatal("accepted a request naming no index")
		}
	})
}

// FuzzChunk: the pieces cover the text in order, each within the size,
// each starting before the previous one ended, with offsets that slice
// the text to the piece.
func FuzzChunk(f *testing.F) {
	f.Add("Refunds are issued within 14 days of a return.", 10, 3)
	f.Add(strings.Repeat("word ", 500), 800, 100)
	f.Add("ünïcödé テキスト 😀😀😀 text", 4, 1)
	f.Add("   \n\t  ", 5, 0)
	f.Add("\xff\xfe broken utf8", 3, 5)
	f.Add("", 0, 0)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		if size > 5000 || size < -5 || overlap > 5000 || overlap < -5 {
			return
		}
		pieces := rag.Chunk(text, size, overlap)
		runes := []rune(text) // invalid bytes become U+FFFD, as in Chunk
		limit := size
		if limit < 1 {
			limit = rag.DefaultChunkSize
		}
		prevStart, prevEnd := -1, 0
		for i, p := range pieces {
			if p.Start < 0 || p.End > len(runes) || p.Start >= p.End {
				t.Fatalf("piece %d: bad offsets %d..%d of %d runes", i, p.Start, p.End, len(runes))
			}
			if p.End-p.Start > limit {
				t.Fatalf("piece %d: %d runes, more than %d", i, p.End-p.Start, limit)
			}
			if string(runes[p.Start:p.End]) != p.Text {
				t.Fatalf("piece %d: text does not match its offsets", i)
			}
			if p.Start <= prevStart || (prevStart >= 0 && p.Start > prevEnd) {
				t.Fatalf("piece %d starts at %d after a piece %d..%d", i, p.Start, prevStart, prevEnd)
			}
			prevStart, prevEnd = p.Start, p.End
		}
		// Every non-space rune is in some piece.
		covered := 0
		for _, p := range pieces {
			if p.Start > covered && strings.TrimSpace(string(runes[covered:p.Start])) != "" {
				t.Fatalf("runes %d..%d are in no piece", covered, p.Start)
			}
			covered = max(covered, p.End)
		}
		if strings.TrimSpace(string(runes[covered:])) != "" {
			t.Fatalf("the tail from %d is in no piece", covered)
		}
	})
}

// FuzzHTMLText: the page parser never panics, and drops every complete
// script element.
func FuzzHTMLText(f *testing.F) {
	f.Add(`<html><title>T</title><script>alert(1)</script><p>Hello &amp; bye</p></html>`)
	f.Add(`<<<>>>`)
	f.Add(`<script>unterminated`)
	f.Fuzz(func(t *testing.T, page string) {
		text, _ := rag.HTMLText(page + "<script>MARKER_X</script>")
		if strings.Contains(text, "MARKER_X") && !strings.Contains(page, "MARKER_X") && !strings.Contains(strings.ToLower(page), "<script") {
			t.Fatalf("script content survived: %q", text)
		}
	})
}
