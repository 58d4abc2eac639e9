package aos

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaJSON is the AOS 0.1.0 JSON Schema, a copy of
// /work/shared/spec/aos/aos_schema.json (the OWASP file with its 33
// misplaced keys repaired, as the spec README says).
//
//go:embed aos_schema.json
var schemaJSON []byte

// schemaURL names the embedded document inside the compiler; it is never
// fetched.
const schemaURL = "urn:warden:aos:0.1.0:aos_schema.json"

// Names of the schema definitions this package compiles on their own,
// besides one per method.
const (
	defRequest  = "ASOPRequest"
	defResponse = "ASOPResponse"
)

// Schema is the compiled AOS schema: the request and response unions and
// one schema per request method. It is immutable and safe for concurrent
// use.
type Schema struct {
	// Version is the schema's "version" member ("0.1.0").
	Version string

	request  *jsonschema.Schema
	response *jsonschema.Schema
	// methods maps each method the schema knows (the "method" const of
	// every ASOPRequest branch) to that branch's definition.
	methods map[string]*jsonschema.Schema
	names   []string
}

// defaultSchema is compiled on first use and never changes afterwards.
var defaultSchema = sync.OnceValues(LoadSchema)

// DefaultSchema returns the embedded schema, compiled once per process.
func DefaultSchema() (*Schema, error) { return defaultSchema() }

// LoadSchema compiles the embedded AOS schema. Every call compiles anew
// (a few milliseconds); DefaultSchema shares one compilation.
func LoadSchema() (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("aos: parse embedded schema: %w", err)
	}
	root, _ := doc.(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	if defs == nil {
		return nil, fmt.Errorf("aos: embedded schema has no $defs")
	}
	c := jsonschema.NewCompiler()
	// The file declares draft-07, where the validator asserts "format" by
	// default; say so, since timestamps must be RFC 3339 date-times
	// whatever a later version of the library defaults to.
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("aos: add embedded schema: %w", err)
	}
	compile := func(def string) (*jsonschema.Schema, error) {
		sch, err := c.Compile(schemaURL + "#/$defs/" + def)
		if err != nil {
			return nil, fmt.Errorf("aos: compile %s: %w", def, err)
		}
		return sch, nil
	}
	s := &Schema{methods: map[string]*jsonschema.Schema{}}
	s.Version, _ = root["version"].(string)
	if s.request, err = compile(defRequest); err != nil {
		return nil, err
	}
	if s.response, err = compile(defResponse); err != nil {
		return nil, err
	}
	// The methods are not listed by hand: each branch of ASOPRequest pins
	// its method with a const, so the schema itself says which exist.
	branches, _ := defs[defRequest].(map[string]any)["oneOf"].([]any)
	for _, b := range branches {
		ref, _ := b.(map[string]any)["$ref"].(string)
		def, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("aos: %s branch %q is not a local definition", defRequest, ref)
		}
		props, _ := defs[def].(map[string]any)["properties"].(map[string]any)
		method, _ := props["method"].(map[string]any)["const"].(string)
		if method == "" {
			return nil, fmt.Errorf("aos: definition %s pins no method", def)
		}
		if s.methods[method], err = compile(def); err != nil {
			return nil, err
		}
		s.names = append(s.names, method)
	}
	if len(s.names) == 0 {
		return nil, fmt.Errorf("aos: embedded schema defines no request methods")
	}
	slices.Sort(s.names)
	return s, nil
}

// Methods returns the request methods the schema knows, sorted.
func (s *Schema) Methods() []string { return slices.Clone(s.names) }

// Knows reports whether method is one of the schema's request methods.
func (s *Schema) Knows(method string) bool {
	_, ok := s.methods[method]
	return ok
}

// ValidateRequest reports whether raw is a valid AOS request (the
// ASOPRequest definition). raw is JSON text as []byte or
// json.RawMessage, a generic JSON value as encoding/json decodes it
// (map[string]any, []any, string, float64 or json.Number, bool, nil), or
// any other Go value, which is first encoded with encoding/json (a
// *Request, for example). The error is a *jsonschema.ValidationError when
// raw is JSON but not a valid request.
func (s *Schema) ValidateRequest(raw any) error {
	v, err := toJSONValue(raw)
	if err != nil {
		return err
	}
	// ASOPRequest is a oneOf whose branches each pin a different method, so
	// for an object naming a known method it holds exactly when that
	// branch holds. Checking the one branch is the same verdict at a
	// fraction of the cost, with errors about that branch only.
	if m, ok := v.(map[string]any); ok {
		if method, ok := m["method"].(string); ok {
			if sch, ok := s.methods[method]; ok {
				return sch.Validate(v)
			}
		}
	}
	return s.request.Validate(v)
}

// ValidateResponse reports whether raw is a valid AOS response (the
// ASOPResponse definition: a decision, a ping result or a JSON-RPC error).
// raw is accepted in the same forms as for ValidateRequest. A response
// may carry the null id JSON-RPC 2.0 requires when the request's
// id could not be read (NoID); the schema knows no null id, so that one
// member is checked as JSON-RPC says and every other as the schema does.
func (s *Schema) ValidateResponse(raw any) error {
	v, err := toJSONValue(raw)
	if err != nil {
		return err
	}
	return s.response.Validate(withIDForSchema(v))
}

// ValidateRequest validates raw against the embedded schema; see
// Schema.ValidateRequest.
func ValidateRequest(raw any) error {
	s, err := defaultSchema()
	if err != nil {
		return err
	}
	return s.ValidateRequest(raw)
}

// ValidateResponse validates raw against the embedded schema; see
// Schema.ValidateResponse.
func ValidateResponse(raw any) error {
	s, err := defaultSchema()
	if err != nil {
		return err
	}
	return s.ValidateResponse(raw)
}

// toJSONValue turns what the Validate functions accept into the generic
// values the validator walks (json.Number numbers).
func toJSONValue(raw any) (any, error) {
	switch r := raw.(type) {
	case []byte:
		return parseJSON(r)
	case json.RawMessage:
		return parseJSON(r)
	case nil, bool, string, json.Number, float64, map[string]any, []any:
		return r, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("aos: encode %T: %w", raw, err)
	}
	return parseJSON(b)
}
