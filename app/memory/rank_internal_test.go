package memory

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func TestTokenize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"a b 7 x9 refund-policy", []string{"7", "x9", "refund", "policy"}},
		{"Grüße aus Köln", []string{"grüße", "aus", "köln"}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, tokenize(tc.in), tc.in)
	}
}

func TestRank(t *testing.T) {
	t.Parallel()
	now := time.Now()
	mk := func(id, text string) store.MemoryItem { return store.MemoryItem{ID: id, Text: text, CreatedAt: now} }
	items := []store.MemoryItem{
		mk("new", "refund requested"),
		mk("long", "refund "+strings.Repeat("filler words here ", 20)),
		mk("rare", "the quokka ate a refund"),
		mk("none", "nothing relevant"),
	}
	got := rank(items, "refund quokka", 10)
	ids := make([]string, len(got))
	for i, s := range got {
		ids[i] = s.item.ID
		require.Positive(t, s.score)
	}
	// The rare term dominates; a short item beats a long one with the same
	// term frequency; the item with no term is left out.
	require.Equal(t, []string{"rare", "new", "long"}, ids)
	require.Len(t, rank(items, "refund", 1), 1)
	require.Nil(t, rank(items, "   ", 10))
	require.Nil(t, rank(nil, "refund", 10))
	// Equal scores keep the newest-first order of the input.
	tie := rank([]store.MemoryItem{mk("b", "same text"), mk("a", "same text")}, "same", 10)
	require.Equal(t, "b", tie[0].item.ID)
}

func TestExtractive(t *testing.T) {
	t.Parallel()
	items := []store.MemoryItem{
		{Text: "Acme wants invoices in euros. It rained."},
		{Text: "Acme invoices: euros only!\nThe cat slept."},
		{Text: "Acme wants invoices in euros."},
	}
	got := extractive(items)
	require.Contains(t, got, "Acme wants invoices in euros.")
	require.Equal(t, 1, strings.Count(got, "Acme wants invoices in euros."), "repeats count once")
	require.Less(t, strings.Index(got, "Acme wants"), strings.Index(got, "Acme invoices"), "original order")
	require.LessOrEqual(t, len(extractive([]store.MemoryItem{{Text: strings.Repeat("word ", 5000)}})), extractiveBytes)
	require.Equal(t, []string{"One.", "Two!", "Three?", "four", "v1.2 stays"}, splitSentences("One. Two! Three?\nfour\nv1.2 stays"))
}
