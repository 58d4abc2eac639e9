package policy

import (
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Modify applies the modify operations of the rule that made decision d to
// target, a JSON object: at toolCallRequest the tool's input, at
// toolCallResult its result. It returns a new object and never changes
// target. Each `set` path (dotted, such as "query.limit") gets the value
// of its CEL expression, evaluated over in (so `input` is the original
// input); each `remove` path is deleted. A decision that is not a modify
// of a known rule returns target unchanged.
func (s *Set) Modify(d Decision, in *Input, target map[string]any) (map[string]any, error) {
	r := s.rule(d)
	if r == nil || (len(r.set) == 0 && len(r.remove) == 0) {
		return target, nil
	}
	out := deepCopy(target).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	act := &activation{in: in}
	for _, op := range r.set {
		if op.prg == nil {
			return nil, fmt.Errorf("modify %s of rule %s: %s", op.path, r.name, op.broken)
		}
		v, _, err := op.prg.Eval(act)
		if err != nil {
			return nil, fmt.Errorf("modify %s of rule %s: %w", op.path, r.name, err)
		}
		native, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
		if err != nil {
			return nil, fmt.Errorf("modify %s of rule %s: the value is not JSON: %w", op.path, r.name, err)
		}
		setPath(out, op.path, native.(*structpb.Value).AsInterface())
	}
	for _, p := range r.remove {
		removePath(out, p)
	}
	return out, nil
}

// rule returns the compiled rule behind d, or nil.
func (s *Set) rule(d Decision) *compiledRule {
	for _, p := range s.policies {
		if p.name == d.Policy && p.namespace == d.Namespace && d.RuleIndex < len(p.rules) {
			return p.rules[d.RuleIndex]
		}
	}
	return nil
}

func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, k := range parts[:len(parts)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func removePath(m map[string]any, path string) {
	parts := strings.Split(path, ".")
	for _, k := range parts[:len(parts)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, parts[len(parts)-1])
}

// deepCopy copies a JSON value so that modifying the copy leaves the
// original intact.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
