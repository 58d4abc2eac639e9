package aos

import (
	"errors"
	"fmt"
)

// JSON-RPC 2.0 error codes, as AOS 0.1.0 uses them.
const (
	// CodeParseError answers a body that is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest answers JSON that is not a single JSON-RPC 2.0
	// request object or whose envelope fails the schema.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound answers a method the schema does not define.
	CodeMethodNotFound = -32601
	// CodeInvalidParams answers params that fail the method's schema.
	CodeInvalidParams = -32602
	// CodeInternalError answers a failure on the answering side.
	CodeInternalError = -32603
	// CodeAOSMin and CodeAOSMax bound the codes AOS reserves for itself
	// (JSON-RPC's implementation-defined server errors).
	CodeAOSMin = -32099
	CodeAOSMax = -32000
)

// The messages the schema gives each standard code (JSONParseError,
// InvalidRequestError, … in its $defs). Errors built here use them
// verbatim and say what went wrong in Data.
const (
	msgParseError     = "Invalid JSON payload"
	msgInvalidRequest = "Request payload validation error"
	msgMethodNotFound = "Method not found"
	msgInvalidParams  = "Invalid parameters"
	msgInternalError  = "Internal error"
)

// Sentinel errors of the package.
var (
	// ErrGuardianUnavailable wraps every failure of Guardian.Call: no
	// answer in time, a transport error, an answer that is not a valid AOS
	// decision, or a JSON-RPC error from the guardian.
	ErrGuardianUnavailable = errors.New("aos: guardian unavailable")
	// ErrInvalidDecision means a decision breaks the rules the schema
	// cannot express: an unknown verdict, modify without modifiedRequest,
	// a modifiedRequest for another method, or one attached to allow/deny.
	ErrInvalidDecision = errors.New("aos: invalid decision")
)

// Error is a JSON-RPC error object. A Governor may return one (or wrap
// one) to answer with that code instead of CodeInternalError.
type Error struct {
	// Code is a JSON-RPC error code, one of the Code constants or a
	// code in [CodeAOSMin, CodeAOSMax].
	Code int `json:"code"`
	// Message is a short description; the standard codes use the
	// schema's wording ("Method not found").
	Message string `json:"message"`
	// Data says more; errors built by this package hold an ErrorData.
	Data any `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string {
	if d, ok := e.Data.(ErrorData); ok && d.Reason != "" {
		return fmt.Sprintf("aos: JSON-RPC error %d: %s: %s", e.Code, e.Message, d.Reason)
	}
	return fmt.Sprintf("aos: JSON-RPC error %d: %s", e.Code, e.Message)
}

// ErrorData is the data member of the errors this package builds.
type ErrorData struct {
	// Reason says in one sentence what is wrong with the request.
	Reason string `json:"reason"`
	// KnownMethods lists the methods the schema defines (CodeMethodNotFound).
	KnownMethods []string `json:"knownMethods,omitempty"`
	// Errors are the schema violations, at most maxFieldErrors of them.
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one schema violation: where in the request, and what.
type FieldError struct {
	// Path is a JSON Pointer into the request ("/params/context/agent").
	Path string `json:"path"`
	// Message is the validator's description ("missing property 'url'").
	Message string `json:"message"`
}

// newError returns an error with the schema's message for code.
func newError(code int, data ErrorData) *Error {
	msg := msgInternalError
	switch code {
	case CodeParseError:
		msg = msgParseError
	case CodeInvalidRequest:
		msg = msgInvalidRequest
	case CodeMethodNotFound:
		msg = msgMethodNotFound
	case CodeInvalidParams:
		msg = msgInvalidParams
	}
	return &Error{Code: code, Message: msg, Data: data}
}

// invalidRequest returns a CodeInvalidRequest error with a reason.
func invalidRequest(format string, args ...any) *Error {
	return newError(CodeInvalidRequest, ErrorData{Reason: fmt.Sprintf(format, args...)})
}

// internalError is the answer to every failure whose details must not
// reach the caller.
func internalError() *Error {
	return &Error{Code: CodeInternalError, Message: msgInternalError}
}
