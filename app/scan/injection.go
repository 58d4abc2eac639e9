package scan

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Mode says what happens to a tool result with prompt-injection findings.
type Mode string

// The injection modes of a Tool's spec.safety.scanInjection.
const (
	// ModeOff does not scan.
	ModeOff Mode = "off"
	// ModeFlag reports findings and leaves the text unchanged.
	ModeFlag Mode = "flag"
	// ModeRedact replaces each finding of medium or high severity with
	// PlaceholderInjection and strips hidden Unicode (tag characters,
	// zero-width characters, bidi controls), whatever its severity.
	ModeRedact Mode = "redact"
	// ModeBlock reports that the result must not reach the model when a
	// finding of medium or high severity is present.
	ModeBlock Mode = "block"
)

// ParseMode returns the Mode named s. The empty string is ModeOff.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeOff, ModeFlag, ModeRedact, ModeBlock:
		return m, nil
	case "":
		return ModeOff, nil
	}
	return "", fmt.Errorf("%w: injection mode %q: want off, flag, redact or block", ErrInvalidOptions, s)
}

// ScanInjection returns the prompt-injection findings in s, ordered by
// offset and not overlapping.
func ScanInjection(s string) []Finding {
	sc := injector{s: s}
	sc.run()
	return sc.out
}

// ApplyInjection scans s and applies mode m: it returns the text to pass
// on (s itself unless m is ModeRedact and something was redacted or
// stripped), the findings with offsets in s, and whether the result must
// be blocked (ModeBlock with a finding of medium or high severity).
// ModeOff returns s without scanning. A mode ParseMode rejects is treated
// as ModeBlock, so a typo in a policy fails closed. When ModeRedact changes
// text that is not valid UTF-8, its invalid bytes become U+FFFD.
func ApplyInjection(s string, m Mode) (string, []Finding, bool) {
	switch m {
	case ModeOff, "":
		return s, nil, false
	}
	fs := ScanInjection(s)
	switch m {
	case ModeFlag:
		return s, fs, false
	case ModeRedact:
		return redactInjection(s, fs), fs, false
	}
	return s, fs, maxSeverity(fs) >= SeverityMedium
}

func maxSeverity(fs []Finding) Severity {
	var m Severity
	for _, f := range fs {
		m = max(m, f.Severity)
	}
	return m
}

// redactInjection replaces the findings of medium and high severity with
// PlaceholderInjection, drops hidden Unicode runs, and strips hidden
// characters inside the low-severity spans it keeps.
func redactInjection(s string, fs []Finding) string {
	need := false
	for _, f := range fs {
		if f.Kind.isHidden() || f.Severity >= SeverityMedium || hasInvisible(s[f.Start:f.End]) {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	// Dropping a hidden character must not join the bytes around it into
	// a new character: in text that is not UTF-8, invalid bytes become
	// U+FFFD (as encoding/json would write them).
	valid := utf8.ValidString(s)
	put := func(p string) {
		if !valid {
			p = strings.ToValidUTF8(p, "\uFFFD")
		}
		b.WriteString(p)
	}
	last := 0
	for _, f := range fs {
		put(s[last:f.Start])
		switch {
		case f.Kind.isHidden():
		case f.Severity >= SeverityMedium:
			b.WriteString(PlaceholderInjection)
		case valid:
			writeVisible(&b, s[f.Start:f.End])
		default:
			var v strings.Builder
			writeVisible(&v, s[f.Start:f.End])
			put(v.String())
		}
		last = f.End
	}
	put(s[last:])
	return b.String()
}

// injector is one pass of the prompt-injection scanner over s. depth is 0
// for the text itself and 1 inside a decoded payload, where nothing is
// decoded again.
type injector struct {
	s     string
	depth int
	out   []Finding
	last  int
	// Where failed matches ended, so that a match is not retried from
	// every position inside the same run (linear time on inputs such as
	// "a-a-a-..." or "[a](x[a](x...").
	blobUntil, linkUntil int
	// htmlStrike caches whether s holds "<s>": 0 unknown, 1 yes, 2 no.
	htmlStrike uint8
}

func (sc *injector) add(k Kind, sev Severity, start, end int) int {
	sc.out = append(sc.out, Finding{Kind: k, Start: start, End: end, Severity: sev})
	sc.last = end
	return end
}

func (sc *injector) run() {
	s := sc.s
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		switch {
		case c >= 0x80:
			if c == 0xE1 || c == 0xE2 || c == 0xEF || c == 0xF3 {
				if e := sc.hidden(i); e > 0 {
					i = e
					continue
				}
			}
			i++
		case isWordByte(c):
			if !wordStart(s, i) {
				i = wordEnd(s, i)
				continue
			}
			if isEscapeLetter(c) && i > 0 && s[i-1] == '\\' && i+1 < n && isWordByte(s[i+1]) {
				i++
				continue
			}
			i = sc.word(i)
		case c == '<':
			if e := sc.angle(i); e > 0 {
				i = e
				continue
			}
			i++
		case c == '[':
			if e := sc.bracket(i); e > 0 {
				i = e
				continue
			}
			i++
		case c == '!':
			if i+1 < n && s[i+1] == '[' {
				if e := sc.link(i, true); e > 0 {
					i = e
					continue
				}
			}
			i++
		default:
			i++
		}
	}
}

// word runs the detectors that start at a word and returns where the scan
// continues.
func (sc *injector) word(i int) int {
	s := sc.s
	alnum, lowerOnly := i, true
	for alnum < len(s) {
		if c := s[alnum]; isLower(c) {
			alnum++
		} else if isAlnum(c) {
			lowerOnly = false
			alnum++
		} else {
			break
		}
	}
	end := wordEnd(s, alnum)
	if end-i >= 16 || (end < len(s) && (s[end] == '+' || s[end] == '/' || s[end] == '-')) {
		if e := sc.encoded(i); e > 0 {
			return e
		}
	}
	if mayStartPhrase(s, i, alnum) && (!lowerOnly || !isPlainEnd(s, alnum) || headOf(s[i:alnum]) != headNone) {
		// A word in lower case that ends plainly is its own normal form:
		// only a phrase head is worth reading.
		w := readWord(s, i)
		if w.n > 0 && !w.long {
			if e := sc.phrase(i, &w); e > 0 {
				return e
			}
		}
	}
	if i > 0 && s[i-1] == '"' {
		if e := sc.jsonToolCall(i, end); e > 0 {
			return e
		}
	}
	if end-i == 4 && end < len(s) && s[end] == ':' && hasPrefixFold(s, i, "data") {
		if e := sc.dataURI(i); e > 0 {
			return e
		}
	}
	return end
}

// nested scans decoded text one level deep and returns its highest
// severity.
func (sc *injector) nested(text string) Severity {
	in := injector{s: text, depth: sc.depth + 1}
	in.run()
	return maxSeverity(in.out)
}
