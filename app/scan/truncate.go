package scan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/jcs"
)

// canonical returns the canonical JSON of v (RFC 8785). A value jcs
// refuses (a string that is not UTF-8, a number out of range) falls back
// to encoding/json without HTML escaping.
func canonical(v any) ([]byte, error) {
	if b, err := jcs.Marshal(v); err == nil {
		return b, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// truncated builds the shape that replaces a result longer than limit:
// {"originalBytes": n, "text": prefix of raw, "truncated": true}, with the
// prefix as long as the limit allows once escaped, and fix applied to it.
func truncated(raw []byte, n int64, limit int64, fix func(string) string) map[string]any {
	wrapper := len(`{"originalBytes":`) + len(strconv.FormatInt(n, 10)) + len(`,"text":"`) + len(`","truncated":true}`)
	budget := max(limit-int64(wrapper), 0)
	text := prefixWithin(string(raw), budget)
	if fix != nil {
		text = prefixWithin(fix(text), budget)
	}
	return map[string]any{"truncated": true, "originalBytes": float64(n), "text": text}
}

// prefixWithin returns the longest prefix of s, cut at a rune boundary,
// whose escaped form inside a canonical JSON string takes at most budget
// bytes.
func prefixWithin(s string, budget int64) string {
	var used int64
	for i := 0; i < len(s); {
		c := s[i]
		size, cost := 1, int64(1)
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			cost = 2
		case c < 0x20:
			cost = 6
		case c >= utf8.RuneSelf:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			cost = int64(size)
			if r == utf8.RuneError && size == 1 {
				cost = 6 // written as \ufffd by encoding/json
			}
		}
		if used+cost > budget {
			return s[:i]
		}
		used += cost
		i += size
	}
	return s
}
