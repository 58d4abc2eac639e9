package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxDocuments is the most documents one body may hold.
const MaxDocuments = 10000

// DocumentError is a problem with one document of a multi-document body.
type DocumentError struct {
	// Document is the zero-based index of the document in the body.
	Document int
	// Line is the one-based line of the body where a YAML syntax error was
	// found; 0 when unknown or not a syntax error.
	Line int
	// Message says what is wrong, naming the document (and line).
	Message string
	// Path is the field at fault when one is known (e.g. "metadata.name").
	Path string
}

// Error returns the message.
func (e *DocumentError) Error() string { return e.Message }

func docErr(doc int, format string, args ...any) *DocumentError {
	return &DocumentError{Document: doc, Message: fmt.Sprintf("document %d: ", doc) + fmt.Sprintf(format, args...)}
}

// DecodeDocuments splits a body into objects. The body is either
// multi-document YAML ("---" separated) or JSON: one object, an array of
// objects, or a {"kind": "List", "items": [...]} (a List is also accepted
// as a YAML document). Empty and comment-only documents are skipped;
// document indexes count only the documents that remain (and the items of
// arrays and Lists, each its own document).
//
// Every document must be a mapping with kind, apiVersion and metadata.name,
// must name a known kind, must not carry unknown top-level or metadata
// fields, and must not repeat the kind/namespace/name of an earlier
// document (an empty namespace counts as "default" for namespaced kinds).
// Objects are returned as written: Default is not applied.
//
// Numbers are decoded faithfully: a number written without fraction or
// exponent that fits in int64 becomes int64, every other number float64.
// Canonical JSON of the result is therefore stable across decode and
// encode round trips. YAML is converted to JSON by sigs.k8s.io/yaml first,
// so a YAML 1.0 arrives as 1 and becomes int64.
func DecodeDocuments(body []byte) ([]*Object, error) {
	raws, err := splitBody(body)
	if err != nil {
		return nil, err
	}
	out := make([]*Object, 0, len(raws))
	seen := make(map[Key]int, len(raws))
	for i, raw := range raws {
		o, err := decodeObject(i, raw)
		if err != nil {
			return nil, err
		}
		k := o.Key()
		if info, _ := LookupKind(o.Kind); info.Namespaced && k.Namespace == "" {
			k.Namespace = DefaultNamespace
		}
		if j, dup := seen[k]; dup {
			return nil, docErr(i, "%s repeats document %d: each resource may appear once in a body", k, j)
		}
		seen[k] = i
		out = append(out, o)
	}
	return out, nil
}

// splitBody returns one JSON document per resource.
func splitBody(body []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if v, ok := decodeWholeJSON(trimmed); ok {
			return expand(nil, 0, v)
		}
	}
	var out []json.RawMessage
	for _, d := range splitYAML(body) {
		if isBlankYAML(d.text) {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(d.text))
		if err != nil {
			return nil, yamlError(len(out), d.line, err)
		}
		if string(bytes.TrimSpace(j)) == "null" {
			continue
		}
		var v any
		if err := decodeJSON(j, &v); err != nil {
			return nil, docErr(len(out), "%v", err)
		}
		if out, err = expand(out, len(out), v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeWholeJSON decodes body as exactly one JSON value.
func decodeWholeJSON(body []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

// expand appends the documents of one decoded value: itself, the items of
// an array or the items of a List.
func expand(out []json.RawMessage, index int, v any) ([]json.RawMessage, error) {
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case map[string]any:
		if t["kind"] == "List" {
			l, ok := t["items"].([]any)
			if !ok && t["items"] != nil {
				return nil, docErr(index, "List items must be a list of objects")
			}
			items = l
		} else {
			items = []any{t}
		}
	case nil:
		return out, nil
	default:
		return nil, docErr(index, "is %s, not a mapping: each document must be an object with apiVersion, kind and metadata", describe(v))
	}
	for _, it := range items {
		i := len(out)
		if i >= MaxDocuments {
			return nil, docErr(i, "too many documents: at most %d are allowed in one body", MaxDocuments)
		}
		if _, ok := it.(map[string]any); !ok {
			return nil, docErr(i, "is %s, not a mapping: each document must be an object with apiVersion, kind and metadata", describe(it))
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, docErr(i, "%v", err)
		}
		out = append(out, b)
	}
	return out, nil
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number, float64, int64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

// decodeObject decodes one document strictly into an Object.
func decodeObject(i int, raw json.RawMessage) (*Object, error) {
	var head map[string]any
	if err := decodeJSON(raw, &head); err != nil {
		return nil, docErr(i, "%v", err)
	}
	kind, _ := head["kind"].(string)
	apiVersion, _ := head["apiVersion"].(string)
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if kind == "" {
		missing = append(missing, "kind")
	}
	if len(missing) > 0 {
		return nil, docErr(i, "%s is missing: every document needs apiVersion (e.g. %s) and kind (e.g. Agent)", strings.Join(missing, " and "), GroupVersion)
	}
	if _, ok := LookupKind(kind); !ok {
		msg := fmt.Sprintf("unknown kind %q", kind)
		if k, ok := LookupPath(kind); ok {
			msg += fmt.Sprintf("; did you mean %q?", k.Kind)
		}
		return nil, docErr(i, "%s", msg)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var o Object
	if err := dec.Decode(&o); err != nil {
		return nil, docErr(i, "%s: %v", kind, err)
	}
	if o.Metadata.Name == "" {
		de := docErr(i, "%s: metadata.name is required", kind)
		de.Path = "metadata.name"
		return nil, de
	}
	o.Spec = normalizeMap(o.Spec)
	o.Status = normalizeMap(o.Status)
	return &o, nil
}

// decodeJSON decodes with UseNumber, so numbers keep their text.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// normalizeMap converts json.Number values to int64 or float64.
func normalizeMap(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = normalizeValue(v)
	}
	return m
}

func normalizeValue(v any) any {
	switch t := v.(type) {
	case json.Number:
		return normalizeNumber(t)
	case map[string]any:
		return normalizeMap(t)
	case []any:
		for i, e := range t {
			t[i] = normalizeValue(e)
		}
		return t
	}
	return v
}

func normalizeNumber(n json.Number) any {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of float64 range: keep the text rather than lose it.
		return s
	}
	return f
}

// yamlDoc is one "---"-separated chunk and the line it starts at.
type yamlDoc struct {
	text string
	line int // one-based line of the chunk's first line in the body
}

// splitYAML splits on lines that are a document separator ("---",
// optionally followed by whitespace, a comment or inline content, which
// starts the next document). Content of block scalars is indented, so a
// separator is never inside one at column 0.
func splitYAML(body []byte) []yamlDoc {
	lines := strings.SplitAfter(string(body), "\n")
	var docs []yamlDoc
	var cur strings.Builder
	start := 1
	for n, l := range lines {
		bare := strings.TrimRight(l, "\r\n")
		if bare == "---" || strings.HasPrefix(bare, "--- ") || strings.HasPrefix(bare, "---\t") {
			docs = append(docs, yamlDoc{text: cur.String(), line: start})
			cur.Reset()
			rest := strings.TrimLeft(bare[3:], " \t")
			if rest != "" && !strings.HasPrefix(rest, "#") {
				// Inline content after the marker belongs to the next
				// document, on the same line.
				cur.WriteString(rest + "\n")
				start = n + 1
			} else {
				start = n + 2
			}
			continue
		}
		if bare == "..." {
			continue
		}
		cur.WriteString(l)
	}
	return append(docs, yamlDoc{text: cur.String(), line: start})
}

func isBlankYAML(s string) bool {
	for l := range strings.SplitSeq(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML parser error into a DocumentError whose line
// counts from the start of the body.
func yamlError(doc, startLine int, err error) *DocumentError {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	line := 0
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		rel, _ := strconv.Atoi(msg[m[2]:m[3]])
		line = rel + startLine - 1
		msg = msg[:m[2]] + strconv.Itoa(line) + msg[m[3]:]
	}
	de := docErr(doc, "invalid YAML: %s", msg)
	de.Line = line
	if line == 0 {
		return de
	}
	if !strings.Contains(msg, "line ") {
		de.Message = fmt.Sprintf("document %d: invalid YAML at line %d: %s", doc, line, msg)
	}
	return de
}
