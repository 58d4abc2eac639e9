package resource

import "strings"

// FieldError is one problem with one field of one document.
type FieldError struct {
	// Path is the field path, e.g. "spec.tools[2].name".
	Path string `json:"path"`
	// Code is a short machine-readable reason: Required, Invalid,
	// NotSupported, Duplicate, NotFound, Forbidden, TooLong, PolicyDenied.
	Code string `json:"code"`
	// Message says what is wrong in words a person can act on.
	Message string `json:"message"`
}

// Field error codes.
const (
	ErrCodeRequired     = "Required"
	ErrCodeInvalid      = "Invalid"
	ErrCodeNotSupported = "NotSupported"
	ErrCodeDuplicate    = "Duplicate"
	ErrCodeNotFound     = "NotFound"
	ErrCodeForbidden    = "Forbidden"
	ErrCodeTooLong      = "TooLong"
	ErrCodePolicyDenied = "PolicyDenied"
)

// FieldErrors is every problem found, all at once.
type FieldErrors []FieldError

// Error joins the messages.
func (e FieldErrors) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Path + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}
