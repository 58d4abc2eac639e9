package resource

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the JSON encoding of o, byte for byte what
// encoding/json.Marshal returns, several times faster for the generic
// values objects hold (map[string]any, []any, strings, float64, bool,
// nil): objects are encoded on every write and every answer of the tool
// gateway. Anything else in Spec or Status takes encoding/json.
func Marshal(o *Object) ([]byte, error) {
	if b, ok := appendObject(make([]byte, 0, 1024), o); ok {
		return b, nil
	}
	return json.Marshal(o)
}

// MarshalValue is Marshal for any value: generic values (an event's data)
// and objects take the fast path, anything else encoding/json. It is the
// HTTP servers' JSON encoder.
func MarshalValue(v any) ([]byte, error) {
	if b, ok := appendValue(make([]byte, 0, 256), v); ok {
		return b, nil
	}
	return json.Marshal(v)
}

func appendObject(b []byte, o *Object) ([]byte, bool) {
	b = append(b, `{"apiVersion":`...)
	b = AppendJSONString(b, o.APIVersion)
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, o.Kind)
	m := &o.Metadata
	b = append(b, `,"metadata":{"name":`...)
	b = AppendJSONString(b, m.Name)
	b = appendField(b, "namespace", m.Namespace)
	if len(m.Labels) > 0 {
		b = append(b, `,"labels":`...)
		b = appendStrings(b, m.Labels)
	}
	if len(m.Annotations) > 0 {
		b = append(b, `,"annotations":`...)
		b = appendStrings(b, m.Annotations)
	}
	b = appendField(b, "uid", m.UID)
	b = appendField(b, "resourceVersion", m.ResourceVersion)
	if m.Generation != 0 {
		b = append(b, `,"generation":`...)
		b = strconv.AppendInt(b, m.Generation, 10)
	}
	b = appendField(b, "creationTimestamp", m.CreationTimestamp)
	b = append(b, '}')
	var ok bool
	if len(o.Spec) > 0 {
		b = append(b, `,"spec":`...)
		if b, ok = appendMap(b, o.Spec); !ok {
			return nil, false
		}
	}
	if len(o.Status) > 0 {
		b = append(b, `,"status":`...)
		if b, ok = appendMap(b, o.Status); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendField appends an omitempty string field.
func appendField(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONString(b, v)
}

func appendStrings(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		b = AppendJSONString(b, m[k])
	}
	return append(b, '}')
}

func appendMap(b []byte, m map[string]any) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	// The keys of a small map stay on the stack: this runs for every
	// object of every record the gateway writes (sortedKeys allocates).
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var ok bool
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		if b, ok = appendValue(b, m[k]); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

func appendValue(b []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return AppendJSONString(b, t), true
	case float64:
		return appendFloat(b, t)
	case int:
		return strconv.AppendInt(b, int64(t), 10), true
	case int64:
		return strconv.AppendInt(b, t, 10), true
	case map[string]any:
		return appendMap(b, t)
	case []any:
		if t == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		var ok bool
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, e); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	case map[string]string:
		if t == nil {
			return append(b, "null"...), true
		}
		return appendStrings(b, t), true
	case *Object:
		if t == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, t)
	default:
		return nil, false
	}
}

// appendFloat formats like encoding/json: the shortest representation,
// exponent form only for very small or large magnitudes, and no NaN or
// infinity (encoding/json refuses them, with its error).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s quoted as encoding/json writes a string:
// <, > and & escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped.
func AppendJSONString[S []byte | string](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonSafe holds the ASCII bytes written as they are in a JSON string:
// printable ones but for ", \, <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
