package memory

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/warden-dev/warden/app/store"
)

// BM25 parameters: the usual defaults (Robertson and Zaragoza).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// tokenize splits s into lower-case terms: runs of letters and digits.
// Single letters are dropped (they carry no meaning and match everywhere);
// single digits are kept.
func tokenize(s string) []string {
	var out []string
	eachToken(s, func(t string) { out = append(out, t) })
	return out
}

// eachToken calls fn with each term of s, as tokenize splits it, without
// collecting them: ranking reads every candidate's text once per query.
func eachToken(s string, fn func(string)) {
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := s[start:end]
		start = -1
		if len(w) == 1 && !unicode.IsDigit(rune(w[0])) {
			return
		}
		fn(strings.ToLower(w))
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
}

// scored is an item with its relevance.
type scored struct {
	item  store.MemoryItem
	score float64
}

// rank scores items against query with Okapi BM25 over the candidates
// (the collection is the items the query's filters selected), keeps those
// with a positive score, and orders them by score, then newest first
// (items come newest first, and the sort is stable). At most limit are
// returned.
func rank(items []store.MemoryItem, query string, limit int) []scored {
	terms := uniqueTerms(tokenize(query))
	if len(terms) == 0 || len(items) == 0 {
		return nil
	}
	want := make(map[string]int, len(terms))
	for i, t := range terms {
		want[t] = i
	}
	// One pass: each item's length and its frequency of each query term.
	type doc struct {
		length int
		tf     []int
	}
	docs := make([]doc, len(items))
	df := make([]int, len(terms))
	total := 0
	for i, it := range items {
		d := &docs[i]
		eachToken(it.Text, func(tok string) {
			d.length++
			if j, ok := want[tok]; ok {
				if d.tf == nil {
					d.tf = make([]int, len(terms))
				}
				if d.tf[j] == 0 {
					df[j]++
				}
				d.tf[j]++
			}
		})
		total += d.length
	}
	n := float64(len(items))
	avg := float64(total) / n
	if avg == 0 {
		avg = 1
	}
	idf := make([]float64, len(terms))
	for j := range terms {
		idf[j] = math.Log(1 + (n-float64(df[j])+0.5)/(float64(df[j])+0.5))
	}
	var out []scored
	for i, d := range docs {
		if d.tf == nil {
			continue
		}
		norm := bm25K1 * (1 - bm25B + bm25B*float64(d.length)/avg)
		s := 0.0
		for j, f := range d.tf {
			if f > 0 {
				tf := float64(f)
				s += idf[j] * tf * (bm25K1 + 1) / (tf + norm)
			}
		}
		out = append(out, scored{item: items[i], score: s})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].score > out[b].score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func uniqueTerms(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
