package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Errors returned for values that have no canonical form.
var (
	// ErrNumber means a number is NaN, infinite, or an integer that an
	// IEEE 754 double cannot hold exactly.
	ErrNumber = errors.New("jcs: number has no canonical form")
	// ErrInvalidUTF8 means a string or object key is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("jcs: string is not valid UTF-8")
	// ErrDuplicateKey means an object in raw JSON names a member twice,
	// which I-JSON (RFC 7493) and therefore RFC 8785 forbid.
	ErrDuplicateKey = errors.New("jcs: duplicate object key")
	// ErrUnsupported means a Go value is not one of the JSON value types
	// Marshal accepts and could not be converted through encoding/json.
	ErrUnsupported = errors.New("jcs: unsupported value")
)

// Marshal returns the RFC 8785 canonical JSON of v. v is a generic JSON
// value as encoding/json produces it (map[string]any, []any, string,
// float64, json.Number, bool, nil), optionally with int, int64,
// map[string]string and []string inside. Any other type is first encoded
// with encoding/json and decoded again, so structs with json tags work too,
// at the cost of a round trip.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Canonicalize parses raw JSON text and returns its canonical form. It
// rejects duplicate object keys and anything after the first value.
func Canonicalize(raw []byte) ([]byte, error) {
	v, err := parse(raw)
	if err != nil {
		return nil, err
	}
	return Marshal(v)
}

func encode(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		return writeString(buf, t)
	case float64:
		return writeNumber(buf, t)
	case float32:
		return writeNumber(buf, float64(t))
	case int:
		return writeInt(buf, int64(t))
	case int32:
		return writeInt(buf, int64(t))
	case int64:
		return writeInt(buf, t)
	case uint32:
		return writeInt(buf, int64(t))
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("%w: %q", ErrNumber, string(t))
		}
		return writeNumber(buf, f)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encode(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, s := range t {
			m[k] = s
		}
		return encode(buf, m)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case []string:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%w: %T: %v", ErrUnsupported, v, err)
		}
		g, err := parse(raw)
		if err != nil {
			return err
		}
		return encode(buf, g)
	}
	return nil
}

// maxSafeInt is 2^53, the largest magnitude up to which every integer is an
// exact IEEE 754 double.
const maxSafeInt = 1 << 53

func writeInt(buf *bytes.Buffer, i int64) error {
	if i > maxSafeInt || i < -maxSafeInt {
		return fmt.Errorf("%w: integer %d is beyond 2^53", ErrNumber, i)
	}
	return writeNumber(buf, float64(i))
}

// writeNumber prints f as ECMAScript's Number.prototype.toString does
// (RFC 8785 section 3.2.2.3): the shortest digits that round-trip, in
// plain notation for 1e-6 <= |f| < 1e21 and in exponent notation
// otherwise, with no "+0" padding of the exponent.
func writeNumber(buf *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%w: %v", ErrNumber, f)
	}
	if f == 0 { // also -0, which ECMAScript prints as "0"
		buf.WriteByte('0')
		return nil
	}
	if f < 0 {
		buf.WriteByte('-')
		f = -f
	}
	format := byte('e')
	if f >= 1e-6 && f < 1e21 {
		format = 'f'
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, format, -1, 64)
	if format == 'e' {
		// Go writes two-digit exponents ("1e+09"); ECMAScript does not.
		if i := bytes.IndexByte(s, 'e'); i > 0 && len(s) > i+3 && s[i+2] == '0' {
			s = append(s[:i+2], s[i+3:]...)
		}
	}
	buf.Write(s)
	return nil
}

const hexDigits = "0123456789abcdef"

// writeString escapes only what JSON requires: the quote, the backslash
// and control characters, using the short escapes where they exist and
// lower-case \u00xx otherwise (RFC 8785 section 3.2.2.2).
func writeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q", ErrInvalidUTF8, s)
	}
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.WriteString(s[start:i])
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[c>>4])
			buf.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// section 3.2.3 requires. It differs from Go's byte order only where a
// supplementary character (encoded as surrogates 0xD800..0xDFFF) meets a
// BMP character at or above U+E000.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmpUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func cmpUnits(a, b rune) int {
	ha, la := units(a)
	hb, lb := units(b)
	if ha != hb {
		return int(ha) - int(hb)
	}
	return int(la) - int(lb)
}

// units returns the first and second UTF-16 code unit of r (0 when r is
// in the BMP and needs only one).
func units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	r -= 0x10000
	return uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))
}

// parse decodes JSON text into generic values with json.Number numbers,
// refusing duplicate keys and trailing data.
func parse(raw []byte) (any, error) {
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("jcs: data after the JSON value")
	}
	return v, nil
}

// ErrLoneSurrogate means a \u escape names half of a UTF-16 surrogate
// pair without the other half; encoding/json would silently turn it into
// U+FFFD, so two different inputs would share one canonical form.
var ErrLoneSurrogate = errors.New("jcs: lone UTF-16 surrogate escape")

// checkSurrogates scans the string escapes of raw JSON for \uD800-\uDFFF
// that do not form a high-low pair.
func checkSurrogates(raw []byte) error {
	inString, pendingHigh := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		isEscapeU := c == '\\' && i+5 < len(raw) && raw[i+1] == 'u'
		var u uint64
		if isEscapeU {
			var err error
			if u, err = strconv.ParseUint(string(raw[i+2:i+6]), 16, 16); err != nil {
				isEscapeU = false
			}
		}
		switch {
		case isEscapeU && u >= 0xDC00 && u <= 0xDFFF:
			if !pendingHigh {
				return fmt.Errorf("%w at byte %d", ErrLoneSurrogate, i)
			}
			pendingHigh = false
			i += 5
			continue
		case pendingHigh:
			return fmt.Errorf("%w at byte %d", ErrLoneSurrogate, i)
		case isEscapeU && u >= 0xD800 && u <= 0xDBFF:
			pendingHigh = true
			i += 5
		case isEscapeU:
			i += 5
		case c == '\\':
			i++ // skip the escaped character, which may be a quote
		case c == '"':
			inString = false
		}
	}
	return nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("jcs: %w", err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("jcs: object key is %T", kt)
				}
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("%w: %q", ErrDuplicateKey, k)
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("jcs: %w", err)
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("jcs: %w", err)
			}
			return a, nil
		}
		return nil, fmt.Errorf("jcs: unexpected %v", t)
	case string:
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("%w: %q", ErrInvalidUTF8, t)
		}
		return t, nil
	default: // json.Number, bool, nil
		return t, nil
	}
}

// SHA256 returns "sha256:" followed by the lower-case hex SHA-256 of the
// canonical JSON of v, the shape Warden uses for schemaSha.
func SHA256(v any) (string, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
