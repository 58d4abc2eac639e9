package scan

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Encoded payloads. A blob is decoded only once (one level deep), and at
// most maxEncoded bytes of it, so a hostile result cannot make the scan
// expensive.
const (
	minEncoded = 64
	maxEncoded = 16 << 10
)

// encoded matches a long base64 or hex blob at word start i: base64 (or
// hex) that decodes to text with an injection of medium severity or more
// is a high-severity KindEncodedInjection; other base64 blobs of at least
// 64 characters that mix upper case, lower case and digits, and hex that
// decodes to text, are low-severity KindEncodedBlob. Hex that decodes to
// binary (hashes, ids) and JWT segments are skipped without a finding.
// A run stops where the alphabet switches between standard ('+', '/') and
// URL-safe ('-', '_') base64.
// It returns the end of the blob, or 0 if there is none here.
func (sc *injector) encoded(i int) int {
	if sc.depth > 0 || i < sc.blobUntil {
		return 0
	}
	s := sc.s
	j := i
	chars, slashes := 0, 0
	var upper, lowerc, digit, std, urlsafe bool
	hexOnly := true
	for j < len(s) && chars < 1<<20 {
		c := s[j]
		switch {
		case isUpper(c):
			upper = true
			hexOnly = hexOnly && c <= 'F'
		case isLower(c):
			lowerc = true
			hexOnly = hexOnly && c <= 'f'
		case isDigit(c):
			digit = true
		case (c == '+' || c == '/') && !urlsafe:
			std = true
			hexOnly = false
			if c == '/' {
				slashes++
			}
		case (c == '-' || c == '_') && !std:
			urlsafe = true
			hexOnly = false
		case (c == '\n' || c == '\r') && chars >= 16 && j+1 < len(s) && (isB64Std(s[j+1]) || s[j+1] == '\n'):
			// A blob wrapped over lines.
			j++
			continue
		default:
			goto done
		}
		chars++
		j++
	}
done:
	for pad := 0; pad < 2 && j < len(s) && s[j] == '='; pad++ {
		j++
	}
	sc.blobUntil = j
	if chars < minEncoded {
		return 0
	}
	blob := s[i:j]
	if hexOnly {
		if chars%2 != 0 {
			return 0
		}
		b := decodeHex(blob)
		if !isText(b) {
			return j // a hash or an id
		}
		if sc.nested(string(b)) >= SeverityMedium {
			return sc.add(KindEncodedInjection, SeverityHigh, i, j)
		}
		return sc.add(KindEncodedBlob, SeverityLow, i, j)
	}
	if !(upper && lowerc && digit) || slashes*10 > chars {
		return 0 // paths, slugs, identifiers
	}
	if strings.HasPrefix(blob, "eyJ") && (j < len(s) && s[j] == '.' || i > 0 && s[i-1] == '.') {
		return j // a JWT segment
	}
	if b := decodeBase64(blob); isText(b) && sc.nested(string(b)) >= SeverityMedium {
		return sc.add(KindEncodedInjection, SeverityHigh, i, j)
	}
	return sc.add(KindEncodedBlob, SeverityLow, i, j)
}

// decodeBase64 decodes up to maxEncoded bytes of a standard or URL-safe
// base64 blob, ignoring line breaks, padding and an incomplete last
// quantum. It returns nil when the blob does not decode.
func decodeBase64(blob string) []byte {
	buf := make([]byte, 0, min(len(blob), maxEncoded))
	urlsafe := false
	for i := 0; i < len(blob) && len(buf) < maxEncoded; i++ {
		switch c := blob[i]; {
		case c == '\n' || c == '\r' || c == '=':
		case c == '-' || c == '_':
			urlsafe = true
			buf = append(buf, c)
		default:
			buf = append(buf, c)
		}
	}
	if len(buf)%4 == 1 {
		buf = buf[:len(buf)-1]
	}
	enc := base64.RawStdEncoding
	if urlsafe {
		enc = base64.RawURLEncoding
	}
	out := make([]byte, enc.DecodedLen(len(buf)))
	n, err := enc.Decode(out, buf)
	if err != nil {
		return nil
	}
	return out[:n]
}

// decodeHex decodes up to maxEncoded bytes of hex, ignoring line breaks.
func decodeHex(blob string) []byte {
	buf := make([]byte, 0, min(len(blob), maxEncoded))
	for i := 0; i < len(blob) && len(buf) < maxEncoded; i++ {
		if c := blob[i]; c != '\n' && c != '\r' {
			buf = append(buf, c)
		}
	}
	buf = buf[:len(buf)&^1]
	n, err := hex.Decode(buf, buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// isText reports whether b is UTF-8 text: at least 8 runes, nine in ten
// of them printable or whitespace.
func isText(b []byte) bool {
	if len(b) < 8 || !utf8.Valid(b) {
		return false
	}
	runes, bad := 0, 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		runes++
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) && classify(r) == hiddenNone {
			bad++
		}
	}
	return bad*10 <= runes
}
