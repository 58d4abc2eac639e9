package scan

import "strings"

// Redact finds personal data and secrets in s and returns s with each
// finding replaced by its kind's placeholder (Kind.Placeholder), and the
// findings with their offsets in s. When nothing is found it returns s
// itself and a nil slice, without allocating.
func Redact(s string) (string, []Finding) {
	fs := scanPII(s)
	if len(fs) == 0 {
		return s, nil
	}
	return replace(s, fs), fs
}

// RedactString returns s with personal data and secrets replaced by their
// placeholders. It is meant for log lines and error messages that might
// quote a tool result.
func RedactString(s string) string {
	out, _ := Redact(s)
	return out
}

// replace returns s with each finding replaced by its placeholder.
func replace(s string, fs []Finding) string {
	var b strings.Builder
	b.Grow(len(s) + 16*len(fs))
	last := 0
	for _, f := range fs {
		b.WriteString(s[last:f.Start])
		b.WriteString(f.Kind.Placeholder())
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactor is one pass of the personal data scanner over s. Detectors run
// at the start of each word (and at a few punctuation triggers) and report
// spans through add; last is the end of the previous span, so spans come
// out ordered and never overlap.
type redactor struct {
	s    string
	out  []Finding
	last int
	// Where failed matches ended, so that a match is not retried from
	// every position inside the same run: without these, inputs such as
	// "eyJ-eyJ-eyJ-..." would take quadratic time.
	jwtUntil, skUntil int
	// pemNoEnd is the offset from which no "-----END " follows, once a
	// search found none (0: not searched).
	pemNoEnd int
	// v6Fail is the end of the last run of hex digits, colons and dots
	// that looked like an IPv6 address (two colons or more) and was not
	// one: nothing inside it is matched either, so that its tail
	// ("00.0.0.000" of "0::00.0.0.000") does not become an address
	// that, once redacted, would make its head ("0::") one.
	v6Fail int
}

func scanPII(s string) []Finding {
	r := redactor{s: s}
	r.run()
	return r.out
}

func (r *redactor) add(k Kind, start, end int) int {
	r.out = append(r.out, Finding{Kind: k, Start: start, End: end})
	r.last = end
	return end
}

func (r *redactor) run() {
	s := r.s
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		switch {
		case isWordByte(c):
			if !wordStart(s, i) {
				i = wordEnd(s, i)
				continue
			}
			if c == 'n' || c == 'r' || c == 't' {
				// The letter of a literal \n escape is not part of the
				// word that follows it.
				if i > 0 && s[i-1] == '\\' && i+1 < n && isWordByte(s[i+1]) {
					i++
					continue
				}
			}
			i = r.word(i)
		case c == '@':
			if end := r.email(i); end > 0 {
				i = end
				continue
			}
			i++
		case c == '+' || c == '(':
			if end := r.numeric(i); end > i {
				i = end
				continue
			}
			i++
		case c == '-':
			if end := r.pem(i); end > 0 {
				i = end
				continue
			}
			i++
		case c == ':':
			// Not after a word, a colon or a placeholder: the tail of
			// something else ("std::", "1.2.3.4::0") is no address.
			if i+1 < n && s[i+1] == ':' && i >= r.v6Fail && (i == 0 || (!isWordByte(s[i-1]) && s[i-1] != ':' && s[i-1] != ']')) {
				if end := r.ipv6(i); end > 0 {
					i = end
					continue
				}
			}
			i++
		default:
			i++
		}
	}
}

// word runs the detectors that may start a word at i and returns where the
// scan continues: after a finding, or after the word.
func (r *redactor) word(i int) int {
	s := r.s
	c := s[i]
	end := wordEnd(s, i)
	if i < r.v6Fail {
		return end
	}
	// An IPv6 address does not start inside a longer run of colons and
	// hex digits ("0A0::0::0" is not an address, nor is its tail).
	v6 := end-i <= 4 && end < len(s) && s[end] == ':' && (i == 0 || (s[i-1] != ':' && s[i-1] != '.'))
	if isDigit(c) {
		if v6 {
			if e := r.ipv6(i); e > 0 {
				return e
			}
		}
		if allDigits(s[i:end]) {
			if e := r.numeric(i); e > i {
				return e
			}
		}
		return end
	}
	if e := r.token(i); e > 0 {
		return e
	}
	if e := r.keyValue(i, end); e > 0 {
		return e
	}
	if end < len(s) && (s[end] == ':' || s[end] == '+') {
		if e := r.urlCredentials(i); e > 0 {
			return e
		}
	}
	if isUpper(c) && end-i >= 2 {
		if e := r.iban(i); e > 0 {
			return e
		}
		if e := r.nino(i); e > 0 {
			return e
		}
	}
	if v6 && isHex(c) {
		if e := r.ipv6(i); e > 0 {
			return e
		}
	}
	return end
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
