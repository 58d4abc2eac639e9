package resource

import (
	"fmt"
	"slices"
	"strings"
)

// Selector filters resources by labels and fields, in the syntax of
// Kubernetes label selectors: comma-separated requirements, all of which
// must hold.
//
//	key=value  key==value  key!=value  key in (a,b)  key notin (a,b)  key  !key
//
// A key that names a field rather than a label starts with "kind",
// "namespace", "name", "metadata.", "spec." or "status." and addresses a
// scalar in the object by its dotted path (metadata.labels are reached with
// plain label keys).
type Selector struct {
	reqs []requirement
}

type selectorOp int

const (
	opEquals selectorOp = iota
	opNotEquals
	opIn
	opNotIn
	opExists
	opNotExists
)

type requirement struct {
	key    string
	field  bool
	op     selectorOp
	values []string
}

// maxSelectorLen bounds the selector text a client may send.
const maxSelectorLen = 4096

// ParseSelector parses a selector. The empty string matches everything.
func ParseSelector(s string) (*Selector, error) {
	if len(s) > maxSelectorLen {
		return nil, fmt.Errorf("selector is longer than %d bytes", maxSelectorLen)
	}
	sel := &Selector{}
	for _, part := range splitRequirements(s) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		r, err := parseRequirement(part)
		if err != nil {
			return nil, err
		}
		sel.reqs = append(sel.reqs, r)
	}
	return sel, nil
}

// splitRequirements splits on commas that are not inside parentheses.
func splitRequirements(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseRequirement(p string) (requirement, error) {
	switch {
	case strings.HasPrefix(p, "!"):
		key := strings.TrimSpace(p[1:])
		return newRequirement(p, key, opNotExists, nil)
	case strings.Contains(p, "!="):
		k, v, _ := strings.Cut(p, "!=")
		return newRequirement(p, k, opNotEquals, []string{strings.TrimSpace(v)})
	case strings.Contains(p, "=="):
		k, v, _ := strings.Cut(p, "==")
		return newRequirement(p, k, opEquals, []string{strings.TrimSpace(v)})
	case strings.Contains(p, "="):
		k, v, _ := strings.Cut(p, "=")
		return newRequirement(p, k, opEquals, []string{strings.TrimSpace(v)})
	}
	fields := strings.Fields(p)
	if len(fields) >= 2 && (fields[1] == "in" || fields[1] == "notin") {
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p[len(fields[0]):]), fields[1]))
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return requirement{}, fmt.Errorf("selector %q: values of %s must be in parentheses", p, fields[1])
		}
		var vals []string
		for v := range strings.SplitSeq(rest[1:len(rest)-1], ",") {
			if v = strings.TrimSpace(v); v != "" {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return requirement{}, fmt.Errorf("selector %q: %s needs at least one value", p, fields[1])
		}
		op := opIn
		if fields[1] == "notin" {
			op = opNotIn
		}
		return newRequirement(p, fields[0], op, vals)
	}
	if len(fields) == 1 {
		return newRequirement(p, fields[0], opExists, nil)
	}
	return requirement{}, fmt.Errorf("selector %q: expected key=value, key!=value, key in (...), key notin (...), key or !key", p)
}

func newRequirement(text, key string, op selectorOp, values []string) (requirement, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return requirement{}, fmt.Errorf("selector %q: empty key", text)
	}
	if strings.ContainsAny(key, " ()=!,") {
		return requirement{}, fmt.Errorf("selector %q: invalid key %q", text, key)
	}
	for _, v := range values {
		if strings.ContainsAny(v, " ()=!,") {
			return requirement{}, fmt.Errorf("selector %q: invalid value %q", text, v)
		}
	}
	return requirement{key: key, field: isFieldKey(key), op: op, values: values}, nil
}

func isFieldKey(k string) bool {
	switch k {
	case "kind", "namespace", "name":
		return true
	}
	return strings.HasPrefix(k, "metadata.") || strings.HasPrefix(k, "spec.") || strings.HasPrefix(k, "status.")
}

// Empty reports whether the selector matches everything.
func (s *Selector) Empty() bool { return s == nil || len(s.reqs) == 0 }

// String renders the selector in canonical form.
func (s *Selector) String() string {
	if s == nil {
		return ""
	}
	parts := make([]string, 0, len(s.reqs))
	for _, r := range s.reqs {
		switch r.op {
		case opEquals:
			parts = append(parts, r.key+"="+r.values[0])
		case opNotEquals:
			parts = append(parts, r.key+"!="+r.values[0])
		case opIn:
			parts = append(parts, r.key+" in ("+strings.Join(r.values, ",")+")")
		case opNotIn:
			parts = append(parts, r.key+" notin ("+strings.Join(r.values, ",")+")")
		case opExists:
			parts = append(parts, r.key)
		case opNotExists:
			parts = append(parts, "!"+r.key)
		}
	}
	return strings.Join(parts, ",")
}

// Matches reports whether o satisfies every requirement.
func (s *Selector) Matches(o *Object) bool {
	if s == nil {
		return true
	}
	for _, r := range s.reqs {
		var v string
		var ok bool
		if r.field {
			v, ok = fieldValue(o, r.key)
		} else {
			v, ok = o.Metadata.Labels[r.key]
		}
		if !r.matches(v, ok) {
			return false
		}
	}
	return true
}

func (r requirement) matches(v string, ok bool) bool {
	switch r.op {
	case opEquals:
		return ok && v == r.values[0]
	case opNotEquals:
		return !ok || v != r.values[0]
	case opIn:
		return ok && slices.Contains(r.values, v)
	case opNotIn:
		return !ok || !slices.Contains(r.values, v)
	case opExists:
		return ok
	default:
		return !ok
	}
}

func fieldValue(o *Object, key string) (string, bool) {
	switch key {
	case "kind":
		return o.Kind, true
	case "namespace", "metadata.namespace":
		return o.Metadata.Namespace, true
	case "name", "metadata.name":
		return o.Metadata.Name, true
	case "metadata.uid":
		return o.Metadata.UID, true
	}
	var root any
	path := strings.Split(key, ".")
	switch path[0] {
	case "spec":
		root = o.Spec
	case "status":
		root = o.Status
	default:
		return "", false
	}
	cur := root
	for _, p := range path[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[p]; !ok {
			return "", false
		}
	}
	switch t := cur.(type) {
	case string:
		return t, true
	case bool, float64, int, int64:
		return fmt.Sprint(t), true
	}
	return "", false
}
