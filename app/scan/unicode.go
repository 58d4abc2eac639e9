package scan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// hiddenClass groups the invisible characters the scanner reports.
type hiddenClass uint8

const (
	hiddenNone   hiddenClass = iota
	hiddenTag                // U+E0000-U+E007F
	hiddenVS                 // U+E0100-U+E01EF, supplementary variation selectors
	hiddenJoiner             // U+200C, U+200D: legitimate in emoji and Indic/Persian text
	hiddenZW                 // U+200B, U+2060-U+2064, U+180E, U+FEFF
	hiddenBidi               // U+202A-U+202E, U+2066-U+2069
)

func classify(r rune) hiddenClass {
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return hiddenTag
	case r >= 0xE0100 && r <= 0xE01EF:
		return hiddenVS
	case r == 0x200C || r == 0x200D:
		return hiddenJoiner
	case r == 0x200B || (r >= 0x2060 && r <= 0x2064) || r == 0x180E || r == 0xFEFF:
		return hiddenZW
	case (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069):
		return hiddenBidi
	}
	return hiddenNone
}

// kind returns the finding kind of a class.
func (c hiddenClass) kind() Kind {
	switch c {
	case hiddenTag, hiddenVS:
		return KindUnicodeTag
	case hiddenBidi:
		return KindBidiControl
	}
	return KindZeroWidth
}

// isInvisible reports the characters the phrase matcher reads through:
// every hidden class, plus marks that render as nothing in running text
// (soft hyphen, left-to-right and right-to-left marks).
func isInvisible(r rune) bool {
	return classify(r) != hiddenNone || r == 0x00AD || r == 0x200E || r == 0x200F
}

// hidden reports the run of hidden characters of one kind that starts at
// i. It returns the end of the run (with or without a finding: a flag
// emoji's tag sequence, a zero-width joiner between emoji and a byte order
// mark at the start are legitimate and not reported), or 0 if no hidden
// character starts at i.
func (sc *injector) hidden(i int) int {
	s := sc.s
	r, size := utf8.DecodeRuneInString(s[i:])
	class := classify(r)
	if class == hiddenNone {
		return 0
	}
	kind := class.kind()
	j := i + size
	count := 1
	classes := 1 << class
	for j < len(s) {
		r2, n2 := utf8.DecodeRuneInString(s[j:])
		c2 := classify(r2)
		if c2 == hiddenNone || c2.kind() != kind {
			break
		}
		classes |= 1 << c2
		count++
		j += n2
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[j:])
	if i == 0 {
		prev = -1
	}
	if j == len(s) {
		next = -1
	}
	var sev Severity
	switch kind {
	case KindUnicodeTag:
		switch {
		case classes == 1<<hiddenTag && prev == 0x1F3F4:
			return j // subdivision flag: black flag, tag letters, cancel tag
		case classes&(1<<hiddenTag) != 0 || count >= 8:
			sev = SeverityHigh
		case count >= 2:
			sev = SeverityMedium
		case unicode.Is(unicode.Han, prev):
			return j // an ideographic variation sequence
		default:
			sev = SeverityLow
		}
	case KindBidiControl:
		sev = SeverityMedium
	default:
		ascii := func(r rune) bool { return r > ' ' && r < 0x7F }
		switch {
		case count == 1 && r == 0xFEFF && i == 0:
			return j // byte order mark
		case classes == 1<<hiddenJoiner:
			if !ascii(prev) || !ascii(next) {
				return j // emoji sequences and scripts that need joiners
			}
			sev = SeverityMedium
		case ascii(prev) || ascii(next):
			sev = SeverityMedium
		default:
			sev = SeverityLow
		}
	}
	return sc.add(kind, sev, i, j)
}

// hasInvisible reports whether s holds a hidden character.
func hasInvisible(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0xE1 || c == 0xE2 || c == 0xEF || c == 0xF3 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			if classify(r) != hiddenNone {
				return true
			}
		}
	}
	return false
}

// writeVisible writes s without its hidden characters.
func writeVisible(b *strings.Builder, s string) {
	last := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if classify(r) != hiddenNone {
			b.WriteString(s[last:i])
			last = i + size
		}
		i += size
	}
	b.WriteString(s[last:])
}
