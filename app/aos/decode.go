package aos

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxFieldErrors bounds the schema violations an error reports.
const maxFieldErrors = 10

// decoded is a request Decode accepted, with the params value it
// validated, so typed params are read without parsing again.
type decoded struct {
	req    *Request
	params map[string]any
}

// Decode parses and validates one AOS request with the embedded schema;
// see Schema.Decode.
func Decode(body []byte) (*Request, *Error) {
	s, err := defaultSchema()
	if err != nil {
		return nil, internalError()
	}
	return s.Decode(body)
}

// Decode parses and validates one AOS request. It answers
//   - CodeParseError when body is not a JSON text (or not UTF-8);
//   - CodeInvalidRequest when it is not one JSON-RPC 2.0 request object
//     with jsonrpc "2.0", a string method and a string or integer id (so
//     batches and notifications too), when it is larger than
//     MaxMessageBytes, or when the method's schema fails outside params
//     (ping's required top-level timestamp, for one);
//   - CodeMethodNotFound when the schema defines no such method; the
//     error's data lists the methods it does define;
//   - CodeInvalidParams when params fail the method's schema; the error's
//     data lists the violations with their JSON Pointers.
func (s *Schema) Decode(body []byte) (*Request, *Error) {
	d, _, e := s.decode(body)
	if e != nil {
		return nil, e
	}
	return d.req, nil
}

// decode is Decode that also returns the id to answer an error with.
func (s *Schema) decode(body []byte) (*decoded, json.RawMessage, *Error) {
	if len(body) > MaxMessageBytes {
		return nil, NoID, invalidRequest("the request is larger than %d bytes", MaxMessageBytes)
	}
	v, err := parseJSON(body)
	if err != nil {
		return nil, NoID, newError(CodeParseError, ErrorData{Reason: err.Error()})
	}
	m, ok := v.(map[string]any)
	if !ok {
		if _, batch := v.([]any); batch {
			return nil, NoID, invalidRequest("batch requests are not supported: AOS 0.1.0 defines one request object per call")
		}
		return nil, NoID, invalidRequest("a request is a JSON object")
	}
	rawID, hasID := m["id"]
	id := NoID
	if validIDValue(rawID) {
		id, _ = marshalJSON(rawID)
	}
	if m["jsonrpc"] != JSONRPCVersion {
		return nil, id, invalidRequest(`jsonrpc must be "2.0"`)
	}
	method, ok := m["method"].(string)
	if !ok {
		return nil, id, invalidRequest("method must be a string")
	}
	if !hasID {
		return nil, id, invalidRequest("id is required: every AOS request expects an answer, so notifications are not accepted")
	}
	if !validIDValue(rawID) {
		return nil, id, invalidRequest("id must be a string or an integer")
	}
	sch, ok := s.methods[method]
	if !ok {
		return nil, id, newError(CodeMethodNotFound, ErrorData{
			Reason:       fmt.Sprintf("%q is not an AOS %s method", truncate(method, 100), s.Version),
			KnownMethods: s.Methods(),
		})
	}
	mend(m)
	if err := sch.Validate(m); err != nil {
		return nil, id, validationError(method, err)
	}
	req, err := requestFrom(m)
	if err != nil {
		// Cannot happen for values parseJSON produced; answer safely anyway.
		return nil, id, internalError()
	}
	return &decoded{req: req, params: obj(m, "params")}, id, nil
}

// validationError turns a schema failure into CodeInvalidParams when every
// violation concerns params, else CodeInvalidRequest.
func validationError(method string, err error) *Error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return internalError()
	}
	p := message.NewPrinter(language.English)
	var fields []FieldError
	code := CodeInvalidParams
	for _, leaf := range leaves(ve, nil) {
		if !aboutParams(leaf) {
			code = CodeInvalidRequest
		}
		if len(fields) < maxFieldErrors {
			fields = append(fields, FieldError{
				Path:    pointer(leaf.InstanceLocation),
				Message: truncate(leaf.ErrorKind.LocalizedString(p), 200),
			})
		}
	}
	reason := fmt.Sprintf("params do not match the schema of %s", method)
	if code == CodeInvalidRequest {
		reason = fmt.Sprintf("the request does not match the schema of %s", method)
	}
	return newError(code, ErrorData{Reason: reason, Errors: fields})
}

// leaves collects the violations at the bottom of a validation error tree.
func leaves(ve *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return append(out, ve)
	}
	for _, c := range ve.Causes {
		out = leaves(c, out)
	}
	return out
}

// aboutParams reports whether a violation lies inside params, or is the
// absence of params itself.
func aboutParams(ve *jsonschema.ValidationError) bool {
	if len(ve.InstanceLocation) > 0 {
		return ve.InstanceLocation[0] == "params"
	}
	r, ok := ve.ErrorKind.(*kind.Required)
	return ok && len(r.Missing) == 1 && r.Missing[0] == "params"
}

// pointer renders an instance location as a JSON Pointer (RFC 6901).
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// truncate shortens s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
