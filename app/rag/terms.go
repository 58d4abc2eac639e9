package rag

import (
	"strings"
	"unicode"
)

// MaxTermLength bounds a term in bytes; longer tokens (hashes, base64) are
// cut, so one blob cannot bloat the term statistics.
const MaxTermLength = 64

// stopwords are English function words that carry no topic: dropping
// them keeps the term statistics small and BM25 focused on content.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"for": true, "from": true, "has": true, "have": true, "in": true, "is": true, "it": true, "its": true,
	"of": true, "on": true, "or": true, "that": true, "the": true, "this": true, "to": true, "was": true,
	"were": true, "will": true, "with": true, "what": true, "how": true, "do": true, "does": true, "i": true,
}

// Terms splits text into lower-case terms: runs of letters and digits,
// stop words dropped, each cut at MaxTermLength bytes and reduced to its
// singular (Harman's S-stemmer), so "refunds" finds "refund".
func Terms(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		t := strings.ToLower(f)
		if stopwords[t] {
			continue
		}
		if len(t) > MaxTermLength {
			t = cutRunes(t, MaxTermLength)
		}
		out = append(out, stem(t))
	}
	return out
}

// TermFrequencies counts the terms of text and returns them with the
// number of terms.
func TermFrequencies(text string) (map[string]int, int) {
	ts := Terms(text)
	tf := make(map[string]int, len(ts))
	for _, t := range ts {
		tf[t]++
	}
	return tf, len(ts)
}

// cutRunes returns the longest prefix of s of at most n bytes that ends
// at a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := 0
	for i := range s {
		if i > n {
			break
		}
		end = i
	}
	return s[:end]
}

// stem is Harman's S-stemmer: it removes English plural endings only,
// which rarely merges unrelated words.
func stem(t string) string {
	if len(t) < 4 {
		return t
	}
	switch {
	case strings.HasSuffix(t, "ies") && !strings.HasSuffix(t, "eies") && !strings.HasSuffix(t, "aies"):
		return t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "es") && !strings.HasSuffix(t, "aes") && !strings.HasSuffix(t, "ees") && !strings.HasSuffix(t, "oes"):
		return t[:len(t)-1]
	case strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "us") && !strings.HasSuffix(t, "ss"):
		return t[:len(t)-1]
	}
	return t
}
