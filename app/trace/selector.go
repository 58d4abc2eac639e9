package trace

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/store"
)

// Selector is a parsed span selector: comma-separated terms key=value or
// key!=value over the span columns (docs/trace.md):
//
//	agent=support-bot,tool=stripe.refund,status=error
//
// Keys: agent, tool, model, service, name (!= allowed), execution,
// namespace and status (= only; status is ok, error or unset). A trace
// matches when one of its spans matches every term.
type Selector struct {
	Agent, Tool, Model, Service, Name, Execution, Namespace string
	NotAgent, NotTool, NotModel, NotService, NotName        string
	// Status is a store.SpanStatus code, or -1 for any.
	Status int
}

// maxSelectorBytes bounds a selector.
const maxSelectorBytes = 4096

// ParseSelector parses a selector; the empty string selects everything.
func ParseSelector(s string) (Selector, error) {
	sel := Selector{Status: -1}
	if len(s) > maxSelectorBytes {
		return sel, fmt.Errorf("the selector is longer than %d bytes", maxSelectorBytes)
	}
	if !utf8.ValidString(s) {
		return sel, fmt.Errorf("the selector is not UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	seen := map[string]bool{}
	for term := range strings.SplitSeq(s, ",") {
		term = strings.TrimSpace(term)
		key, val, neg := "", "", false
		if k, v, ok := strings.Cut(term, "!="); ok {
			key, val, neg = k, v, true
		} else if k, v, ok := strings.Cut(term, "="); ok {
			key, val = k, strings.TrimPrefix(v, "=")
		} else {
			return sel, fmt.Errorf("selector term %q is not key=value or key!=value", term)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if val == "" {
			return sel, fmt.Errorf("selector term %q has no value", term)
		}
		if strings.ContainsAny(val, "=!") {
			return sel, fmt.Errorf("selector term %q: a value cannot contain '=' or '!'", term)
		}
		id := key
		if neg {
			id += "!"
		}
		if seen[id] {
			return sel, fmt.Errorf("selector names %s twice", key)
		}
		seen[id] = true
		var eq, ne *string
		switch key {
		case "agent":
			eq, ne = &sel.Agent, &sel.NotAgent
		case "tool":
			eq, ne = &sel.Tool, &sel.NotTool
		case "model":
			eq, ne = &sel.Model, &sel.NotModel
		case "service":
			eq, ne = &sel.Service, &sel.NotService
		case "name":
			eq, ne = &sel.Name, &sel.NotName
		case "execution":
			eq = &sel.Execution
		case "namespace":
			eq = &sel.Namespace
		case "status":
			if neg {
				return sel, fmt.Errorf("selector term %q: status takes = only", term)
			}
			switch strings.ToLower(val) {
			case "error":
				sel.Status = store.SpanStatusError
			case "ok":
				sel.Status = store.SpanStatusOK
			case "unset":
				sel.Status = store.SpanStatusUnset
			default:
				return sel, fmt.Errorf("selector term %q: status is ok, error or unset", term)
			}
			continue
		default:
			return sel, fmt.Errorf("selector key %q is unknown: use agent, tool, model, service, name, execution, namespace or status", key)
		}
		if neg {
			if ne == nil {
				return sel, fmt.Errorf("selector term %q: %s takes = only", term, key)
			}
			*ne = val
		} else {
			*eq = val
		}
	}
	return sel, nil
}

// filter returns the store filter of the selector.
func (s Selector) filter() store.SpanFilter {
	return store.SpanFilter{Agent: s.Agent, Tool: s.Tool, Model: s.Model, Service: s.Service, Name: s.Name, Execution: s.Execution,
		NotAgent: s.NotAgent, NotTool: s.NotTool, NotModel: s.NotModel, NotService: s.NotService, NotName: s.NotName, Status: s.Status}
}
