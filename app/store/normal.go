package store

import (
	"math"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/resource"
)

// The functions here do what a JSON round trip does to generic values
// (encode, then decode into an any) without encoding: a record is copied
// and compared on every tool call, and the round trip was a tenth of the
// gateway's CPU. Each one reports false when its input holds something
// whose round trip it does not reproduce exactly (a struct, a float32, an
// invalid UTF-8 string, a NaN); the caller then takes the round trip.

// normalObject returns the copy of o that jsonCopy would, and false when it
// cannot tell.
func normalObject(o *resource.Object) (*resource.Object, bool) {
	m := &o.Metadata
	for _, s := range [...]string{o.APIVersion, o.Kind, m.Name, m.Namespace, m.UID, m.ResourceVersion, m.CreationTimestamp} {
		if !utf8.ValidString(s) {
			return nil, false
		}
	}
	out := *o
	var ok bool
	if out.Metadata.Labels, ok = normalStrings(m.Labels); !ok {
		return nil, false
	}
	if out.Metadata.Annotations, ok = normalStrings(m.Annotations); !ok {
		return nil, false
	}
	if out.Spec, ok = normalMap(o.Spec); !ok {
		return nil, false
	}
	if out.Status, ok = normalMap(o.Status); !ok {
		return nil, false
	}
	normalize(&out)
	return &out, true
}

func normalStrings(m map[string]string) (map[string]string, bool) {
	if m == nil {
		return nil, true
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, false
		}
		c[k] = v
	}
	return c, true
}

func normalMap(m map[string]any) (map[string]any, bool) {
	if m == nil {
		return nil, true
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) {
			return nil, false
		}
		n, ok := normalValue(v)
		if !ok {
			return nil, false
		}
		c[k] = n
	}
	return c, true
}

// normalValue returns v as its JSON round trip decodes: objects as
// map[string]any, arrays as []any, numbers as float64, and nil maps and
// slices as nil (they encode as null).
func normalValue(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case float64:
		return t, finite(t)
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case int32:
		return float64(t), true
	case uint64:
		return float64(t), true
	case uint32:
		return float64(t), true
	case uint:
		return float64(t), true
	case map[string]any:
		if t == nil {
			return nil, true
		}
		return normalMap(t)
	case []any:
		if t == nil {
			return nil, true
		}
		c := make([]any, len(t))
		for i, e := range t {
			n, ok := normalValue(e)
			if !ok {
				return nil, false
			}
			c[i] = n
		}
		return c, true
	case map[string]string:
		if t == nil {
			return nil, true
		}
		c := make(map[string]any, len(t))
		for k, s := range t {
			if !utf8.ValidString(k) || !utf8.ValidString(s) {
				return nil, false
			}
			c[k] = s
		}
		return c, true
	case []string:
		if t == nil {
			return nil, true
		}
		c := make([]any, len(t))
		for i, s := range t {
			if !utf8.ValidString(s) {
				return nil, false
			}
			c[i] = s
		}
		return c, true
	default:
		return nil, false
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// normalEqual reports whether a and b, generic JSON values as decoded
// (map[string]any, []any, string, float64, bool, nil), have the same
// encoding. ok is false when either holds anything else.
func normalEqual(a, b any) (equal, ok bool) {
	ka, okA := kindOf(a)
	kb, okB := kindOf(b)
	if !okA || !okB {
		return false, false
	}
	if ka != kb {
		return false, true
	}
	if ka == "null" {
		return true, true
	}
	switch x := a.(type) {
	case bool:
		return x == b.(bool), true
	case string:
		return x == b.(string), true
	case float64:
		// -0 and 0 encode differently.
		return math.Float64bits(x) == math.Float64bits(b.(float64)), true
	case map[string]any:
		y := b.(map[string]any)
		if len(x) != len(y) {
			return false, true
		}
		for k, xv := range x {
			if !utf8.ValidString(k) {
				return false, false
			}
			yv, found := y[k]
			if !found {
				return false, true
			}
			if eq, ok := normalEqual(xv, yv); !ok || !eq {
				return false, ok
			}
		}
		return true, true
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false, true
		}
		for i := range x {
			if eq, ok := normalEqual(x[i], y[i]); !ok || !eq {
				return false, ok
			}
		}
		return true, true
	}
	return false, false
}

// kindOf returns the JSON kind of v, a generic JSON value, and false when v
// is anything else (or a string that is not valid UTF-8, or a number that
// is not finite). Nil maps and slices are null, as they encode.
func kindOf(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "null", true
	case bool:
		return "bool", true
	case string:
		return "string", utf8.ValidString(t)
	case float64:
		return "number", finite(t)
	case map[string]any:
		if t == nil {
			return "null", true
		}
		return "object", true
	case []any:
		if t == nil {
			return "null", true
		}
		return "array", true
	default:
		return "", false
	}
}
