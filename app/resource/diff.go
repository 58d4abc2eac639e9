package resource

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
)

// Diff operations.
const (
	DiffAdd     = "add"
	DiffRemove  = "remove"
	DiffReplace = "replace"
)

// FieldChange is one difference between two versions of a resource.
type FieldChange struct {
	// Path addresses the field, e.g. "spec.tools[2].name" or
	// "metadata.labels[app.kubernetes.io/name]".
	Path string `json:"path"`
	// Op is "add", "remove" or "replace".
	Op string `json:"op"`
	// Old is the previous value; null for "add". (Not omitempty: a
	// false or 0 value must still be shown.)
	Old any `json:"old"`
	// New is the new value; null for "remove".
	New any `json:"new"`
}

// Diff compares the spec, labels and annotations of two versions of a
// resource field by field (status and server-set metadata are ignored).
// Objects are compared key by key and lists element by element ("[i]");
// a value whose type changes is one "replace". Numbers compare by value, so
// int64(1) equals float64(1). Changes come in path order: metadata
// (annotations, then labels) before spec, keys sorted, list indexes in
// numeric order. A nil object counts as empty, so Diff(nil, o) lists
// everything o sets.
func Diff(old, new *Object) []FieldChange {
	if old == nil {
		old = &Object{}
	}
	if new == nil {
		new = &Object{}
	}
	var out []FieldChange
	diffValue(&out, "metadata.annotations", stringMap(old.Metadata.Annotations), stringMap(new.Metadata.Annotations))
	diffValue(&out, "metadata.labels", stringMap(old.Metadata.Labels), stringMap(new.Metadata.Labels))
	diffValue(&out, "spec", mapOrEmpty(old.Spec), mapOrEmpty(new.Spec))
	return out
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mapOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func diffValue(out *[]FieldChange, path string, a, b any) {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := sortedKeys(at)
		for k := range bt {
			if _, ok := at[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := joinPath(path, k)
			av, inA := at[k]
			bv, inB := bt[k]
			switch {
			case !inA:
				*out = append(*out, FieldChange{Path: p, Op: DiffAdd, New: copyValue(bv)})
			case !inB:
				*out = append(*out, FieldChange{Path: p, Op: DiffRemove, Old: copyValue(av)})
			default:
				diffValue(out, p, av, bv)
			}
		}
		return
	case []any:
		bt, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(at), len(bt)); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(at):
				*out = append(*out, FieldChange{Path: p, Op: DiffAdd, New: copyValue(bt[i])})
			case i >= len(bt):
				*out = append(*out, FieldChange{Path: p, Op: DiffRemove, Old: copyValue(at[i])})
			default:
				diffValue(out, p, at[i], bt[i])
			}
		}
		return
	}
	if !scalarEqual(a, b) {
		*out = append(*out, FieldChange{Path: path, Op: DiffReplace, Old: copyValue(a), New: copyValue(b)})
	}
}

// scalarEqual compares two leaf values; numbers of any Go type compare by
// value, containers against non-containers are never equal.
func scalarEqual(a, b any) bool {
	if ra, ok := toRat(a); ok {
		rb, ok := toRat(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}

func toRat(v any) (*big.Rat, bool) {
	r := new(big.Rat)
	switch t := v.(type) {
	case int:
		return r.SetInt64(int64(t)), true
	case int64:
		return r.SetInt64(t), true
	case float64:
		if r.SetFloat64(t) == nil {
			return nil, false
		}
		return r, true
	case json.Number:
		if _, ok := r.SetString(t.String()); ok {
			return r, true
		}
	}
	return nil, false
}
