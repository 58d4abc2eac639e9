package resource

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaFS holds one JSON Schema (draft 2020-12) per kind, named
// <plural>.json. docs/schemas holds identical published copies.
//
//go:embed schemas/*.json
var schemaFS embed.FS

// Schema returns the raw JSON Schema of kind (its CamelCase name), covering
// the envelope and the spec; false when the kind is unknown.
func Schema(kind string) ([]byte, bool) {
	info, ok := LookupKind(kind)
	if !ok {
		return nil, false
	}
	b, err := schemaFS.ReadFile("schemas/" + info.Plural + ".json")
	if err != nil {
		return nil, false
	}
	return b, true
}

// schemaSet is every kind's compiled schema.
type schemaSet struct {
	byKind  map[string]*jsonschema.Schema
	raw     map[string]any // kind → decoded schema document, for suggestions
	printer *message.Printer
}

// compiledSchemas compiles the embedded schemas once, on first use. The
// schemas are part of the binary, so a compile error is a programming error
// that the package's tests catch; it is reported by Validate, not panicked.
var compiledSchemas = sync.OnceValues(newSchemaSet)

func newSchemaSet() (*schemaSet, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	urls := make(map[string]string, len(catalog))
	docs := make(map[string]any, len(catalog))
	for _, k := range catalog {
		b, ok := Schema(k.Kind)
		if !ok {
			return nil, fmt.Errorf("no schema for kind %s", k.Kind)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("parse schema of %s: %w", k.Kind, err)
		}
		url := "https://warden.dev/schemas/" + k.Plural + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("add schema of %s: %w", k.Kind, err)
		}
		urls[k.Kind] = url
		docs[k.Kind] = doc
	}
	set := &schemaSet{byKind: make(map[string]*jsonschema.Schema, len(urls)), raw: docs, printer: message.NewPrinter(language.English)}
	for kind, url := range urls {
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile schema of %s: %w", kind, err)
		}
		set.byKind[kind] = s
	}
	return set, nil
}

// schemaErrors converts a validation error tree into field errors, one per
// leaf, with Kubernetes-style paths.
func (s *schemaSet) schemaErrors(kind string, err error) FieldErrors {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return FieldErrors{{Path: "", Code: ErrCodeInvalid, Message: err.Error()}}
	}
	var out FieldErrors
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, s.leafErrors(kind, e)...)
	}
	walk(ve)
	return out
}

func (s *schemaSet) leafErrors(kindName string, e *jsonschema.ValidationError) FieldErrors {
	path := pointerPath(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out FieldErrors
		for _, m := range k.Missing {
			p := joinPath(path, m)
			out = append(out, FieldError{Path: p, Code: ErrCodeRequired, Message: p + " is required"})
		}
		return out
	case *kind.AdditionalProperties:
		var out FieldErrors
		allowed := s.allowedFields(kindName, e.InstanceLocation)
		for _, p := range k.Properties {
			msg := fmt.Sprintf("unknown field %q", p)
			if sug := suggest(p, allowed); sug != "" {
				msg += fmt.Sprintf("; did you mean %q?", sug)
			} else if len(allowed) > 0 {
				msg += "; allowed fields: " + strings.Join(allowed, ", ")
			}
			out = append(out, FieldError{Path: joinPath(path, p), Code: ErrCodeNotSupported, Message: msg})
		}
		return out
	case *kind.Enum:
		return FieldErrors{{Path: path, Code: ErrCodeNotSupported, Message: fmt.Sprintf("unsupported value %s: %s", display(k.Got), s.kindMessage(e))}}
	case *kind.Const:
		return FieldErrors{{Path: path, Code: ErrCodeNotSupported, Message: fmt.Sprintf("unsupported value %s: must be %s", display(k.Got), display(k.Want))}}
	case *kind.MaxLength:
		return FieldErrors{{Path: path, Code: ErrCodeTooLong, Message: s.kindMessage(e)}}
	case *kind.MinItems:
		if k.Got == 0 {
			return FieldErrors{{Path: path, Code: ErrCodeRequired, Message: fmt.Sprintf("needs at least %d item(s)", k.Want)}}
		}
	case *kind.MinLength:
		if k.Got == 0 {
			return FieldErrors{{Path: path, Code: ErrCodeRequired, Message: "must not be empty"}}
		}
	case *kind.UniqueItems:
		return FieldErrors{{Path: path, Code: ErrCodeDuplicate, Message: s.kindMessage(e)}}
	case *kind.Type:
		return FieldErrors{{Path: path, Code: ErrCodeInvalid, Message: fmt.Sprintf("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)}}
	}
	return FieldErrors{{Path: path, Code: ErrCodeInvalid, Message: s.kindMessage(e)}}
}

func (s *schemaSet) kindMessage(e *jsonschema.ValidationError) string {
	return e.ErrorKind.LocalizedString(s.printer)
}

func display(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("%q", t)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

// pointerPath turns JSON Pointer tokens into "spec.tools[2].name".
func pointerPath(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(pathSegment(b.Len() == 0, t))
	}
	return b.String()
}

// joinPath appends one object key to a path.
func joinPath(path, key string) string {
	return path + pathSegment(path == "", key)
}

// pathSegment renders one token: numeric tokens as [i], plain keys as
// .key, and keys with dots, slashes or brackets (label keys, headers) as
// [key].
func pathSegment(first bool, t string) string {
	if isIndex(t) {
		return "[" + t + "]"
	}
	if t == "" || strings.ContainsAny(t, ".[]/ ") {
		return "[" + t + "]"
	}
	if first {
		return t
	}
	return "." + t
}

func isIndex(t string) bool {
	if t == "" {
		return false
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// allowedFields walks the raw schema of kind along an instance location and
// returns the sorted property names allowed there.
func (s *schemaSet) allowedFields(kind string, loc []string) []string {
	node, _ := s.raw[kind].(map[string]any)
	for _, t := range loc {
		if node == nil {
			return nil
		}
		if props, ok := node["properties"].(map[string]any); ok {
			if next, ok := props[t].(map[string]any); ok {
				node = next
				continue
			}
		}
		if items, ok := node["items"].(map[string]any); ok && isIndex(t) {
			node = items
			continue
		}
		node, _ = node["additionalProperties"].(map[string]any)
	}
	props, _ := node["properties"].(map[string]any)
	return sortedKeys(props)
}

// suggest returns the allowed name closest to a misspelt one: equal but for
// case, or at most two edits away; "" when none is close.
func suggest(name string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if strings.EqualFold(a, name) {
			return a
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
