// Package apierr defines the documented error body of every Warden API,
// {"error": {"code", "message", "details"}}, its codes and their HTTP status.
// Codes equal trace event names where one exists.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Codes and their HTTP status, as docs/api.md lists them.
const (
	CodeInvalidRequest    = "InvalidRequest"
	CodeUnauthenticated   = "Unauthenticated"
	CodeForbidden         = "Forbidden"
	CodePolicyDenied      = "PolicyDenied"
	CodeApprovalDenied    = "ApprovalDenied"
	CodeNotFound          = "NotFound"
	CodeConflict          = "Conflict"
	CodeGone              = "Gone"
	CodePayloadTooLarge   = "PayloadTooLarge"
	CodeAdmissionRejected = "AdmissionRejected"
	CodeQuarantined       = "Quarantined"
	CodeRateLimited       = "RateLimited"
	CodeBudgetExceeded    = "BudgetExceeded"
	CodeInternal          = "Internal"
	CodeToolFailed        = "ToolFailed"
	CodeUnavailable       = "Unavailable"
	CodeTimeout           = "Timeout"
)

var statusOf = map[string]int{
	CodeInvalidRequest:    http.StatusBadRequest,
	CodeUnauthenticated:   http.StatusUnauthorized,
	CodeForbidden:         http.StatusForbidden,
	CodePolicyDenied:      http.StatusForbidden,
	CodeApprovalDenied:    http.StatusForbidden,
	CodeNotFound:          http.StatusNotFound,
	CodeConflict:          http.StatusConflict,
	CodeGone:              http.StatusGone,
	CodePayloadTooLarge:   http.StatusRequestEntityTooLarge,
	CodeAdmissionRejected: http.StatusUnprocessableEntity,
	CodeQuarantined:       http.StatusLocked,
	CodeRateLimited:       http.StatusTooManyRequests,
	CodeBudgetExceeded:    http.StatusTooManyRequests,
	CodeInternal:          http.StatusInternalServerError,
	CodeToolFailed:        http.StatusBadGateway,
	CodeUnavailable:       http.StatusServiceUnavailable,
	CodeTimeout:           http.StatusGatewayTimeout,
}

// Status returns the HTTP status of a code (500 for an unknown code).
func Status(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an API error. It is also the wire body's inner object.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Body is the wire shape {"error": {...}}.
type Body struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Status returns the HTTP status of the error's code.
func (e *Error) Status() int { return Status(e.Code) }

// New returns an error with a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e with details set.
func (e *Error) WithDetails(d map[string]any) *Error {
	c := *e
	c.Details = d
	return &c
}

// As extracts an *Error from err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
