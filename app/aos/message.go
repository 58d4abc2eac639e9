package aos

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// JSONRPCVersion is the only jsonrpc member AOS accepts.
const JSONRPCVersion = "2.0"

// Methods this package treats specially. The full list comes from the
// schema (Schema.Methods).
const (
	// MethodToolCallRequest is sent before a tool runs; it carries
	// ToolCallRequestParams.
	MethodToolCallRequest = "steps/toolCallRequest"
	// MethodToolCallResult is sent after a tool ran; it carries
	// ToolCallResultParams.
	MethodToolCallResult = "steps/toolCallResult"
	// MethodPing is answered with a PingResult, never with a decision.
	MethodPing = "ping"
	// MethodMCP carries an MCP message for the Guardian to judge.
	MethodMCP = "protocols/MCP"
)

// MaxMessageBytes bounds a request Serve accepts and a response
// Guardian.Call reads: 1 MiB.
const MaxMessageBytes = 1 << 20

// NoID is the id of an error response to a request whose id could not be
// read (not JSON, not an object, no id, or an id that is neither a string
// nor an integer): null, as JSON-RPC 2.0 requires. The AOS schema's
// response definitions ask for a string or an integer id there; that is
// the one place Warden follows JSON-RPC over the schema (such a response
// is valid against the schema in every other member).
var NoID = json.RawMessage(`null`)

// Request is a JSON-RPC 2.0 request as AOS defines it.
type Request struct {
	// JSONRPC is always "2.0".
	JSONRPC string `json:"jsonrpc"`
	// ID is the JSON text of the request id, a string or an integer.
	ID json.RawMessage `json:"id,omitempty"`
	// Method is one of the schema's methods (Schema.Methods).
	Method string `json:"method"`
	// Params is the JSON text of the params object. Decode re-encodes it
	// from the value it validated, so it holds exactly what was checked
	// (no duplicate members, whatever the sender wrote).
	Params json.RawMessage `json:"params,omitempty"`
	// Timestamp is the JSON text of the top-level timestamp the schema's
	// PingRequest requires; other methods have none. The schema gives it
	// no type there (only params.timestamp is a date-time), so it is kept
	// as sent, whatever it is.
	Timestamp json.RawMessage `json:"timestamp,omitempty"`
}

// NewRequest returns a request for method with the given id (a string or
// an integer) and params (encoded with encoding/json; nil for none). It
// does not validate; ValidateRequest does, and Guardian.Call does before
// sending.
func NewRequest(id any, method string, params any) (*Request, error) {
	rawID, err := marshalJSON(id)
	if err != nil {
		return nil, fmt.Errorf("aos: encode id: %w", err)
	}
	if !validID(rawID) {
		return nil, fmt.Errorf("aos: id %s is neither a string nor an integer", rawID)
	}
	r := &Request{JSONRPC: JSONRPCVersion, ID: rawID, Method: method}
	if params != nil {
		if r.Params, err = marshalJSON(params); err != nil {
			return nil, fmt.Errorf("aos: encode params of %s: %w", method, err)
		}
	}
	return r, nil
}

// Response is a JSON-RPC 2.0 response: Result or Error, never both.
type Response struct {
	// JSONRPC is always "2.0".
	JSONRPC string `json:"jsonrpc"`
	// ID echoes the request id, or is NoID.
	ID json.RawMessage `json:"id"`
	// Result is a Decision, or a PingResult for ping.
	Result any `json:"result,omitempty"`
	// Error is set when the request failed.
	Error *Error `json:"error,omitempty"`
}

// PingResult answers ping (the schema's PingRequestResult).
type PingResult struct {
	// Status is "connected".
	Status string `json:"status"`
	// Version is the answering side's version.
	Version string `json:"version"`
	// Timestamp is when the answer was made, RFC 3339.
	Timestamp string `json:"timestamp"`
}

// Result returns the success response carrying d to the request with id.
// An id that is not a string or an integer is replaced by NoID, so the
// response is valid against the schema whenever d is (see Decision).
func Result(id json.RawMessage, d Decision) *Response {
	return &Response{JSONRPC: JSONRPCVersion, ID: responseID(id), Result: d}
}

// ErrorResponse returns the error response carrying e to the request with
// id (NoID when the id is unknown or not a string or an integer). A nil e
// is answered as an internal error.
func ErrorResponse(id json.RawMessage, e *Error) *Response {
	if e == nil {
		e = internalError()
	}
	return &Response{JSONRPC: JSONRPCVersion, ID: responseID(id), Error: e}
}

// responseID returns id if the schema allows it in a response, else NoID.
func responseID(id json.RawMessage) json.RawMessage {
	if validID(id) {
		return id
	}
	return NoID
}

// validID reports whether raw is JSON text of an id the schema allows.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	v, err := parseJSON(raw)
	return err == nil && validIDValue(v)
}

// validIDValue reports whether a decoded id is a string or an integer in
// the schema's sense: any number without a fractional part, so 7, 7.0
// and 7e2 are integers (draft-07 and the validator agree).
func validIDValue(v any) bool {
	switch v := v.(type) {
	case string:
		return true
	case json.Number:
		r, ok := ratOf(v)
		return ok && r.IsInt()
	}
	return false
}

// ratOf returns the exact value of a JSON number. big.Rat refuses
// exponents too large to expand, so a hostile 1e999999999 costs nothing.
func ratOf(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(n.String())
}
