package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
)

// ErrUnreachable is wrapped by errors returned when the server could not be
// reached (connection refused, unknown host, network unreachable).
var ErrUnreachable = errors.New("server unreachable")

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// APIError is an error answer of the server: its HTTP status and the
// documented body {"error": {"code", "message", "details"}}. It unwraps to
// the *apierr.Error, so apierr.As finds the code and details.
type APIError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Err is the decoded error body; never nil.
	Err *apierr.Error
}

// Error renders "Code: message (HTTP status)".
func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Err.Error(), e.StatusCode)
}

// Unwrap returns the decoded *apierr.Error.
func (e *APIError) Unwrap() error { return e.Err }

// StatusCode returns the HTTP status of an *APIError in err's chain, or 0.
func StatusCode(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// Diagnostics returns the diagnostics of an AdmissionRejected error in
// err's chain, or nil.
func Diagnostics(err error) []api.Diagnostic {
	e, ok := apierr.As(err)
	if !ok || e.Details == nil {
		return nil
	}
	raw, ok := e.Details["diagnostics"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var out []api.Diagnostic
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// decodeError turns a non-2xx answer into an *APIError. A body that is not
// the documented shape still yields an error carrying the status and a
// code derived from it.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body apierr.Body
	if err := json.Unmarshal(b, &body); err == nil && body.Error != nil && body.Error.Code != "" {
		return &APIError{StatusCode: resp.StatusCode, Err: body.Error}
	}
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return &APIError{StatusCode: resp.StatusCode, Err: &apierr.Error{Code: codeForStatus(resp.StatusCode), Message: msg}}
}

// codeForStatus maps an HTTP status back onto the most general code that
// answers with it.
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return apierr.CodeInvalidRequest
	case http.StatusUnauthorized:
		return apierr.CodeUnauthenticated
	case http.StatusForbidden:
		return apierr.CodeForbidden
	case http.StatusNotFound:
		return apierr.CodeNotFound
	case http.StatusConflict:
		return apierr.CodeConflict
	case http.StatusGone:
		return apierr.CodeGone
	case http.StatusRequestEntityTooLarge:
		return apierr.CodePayloadTooLarge
	case http.StatusUnprocessableEntity:
		return apierr.CodeAdmissionRejected
	case http.StatusLocked:
		return apierr.CodeQuarantined
	case http.StatusTooManyRequests:
		return apierr.CodeRateLimited
	case http.StatusBadGateway:
		return apierr.CodeToolFailed
	case http.StatusServiceUnavailable:
		return apierr.CodeUnavailable
	case http.StatusGatewayTimeout:
		return apierr.CodeTimeout
	default:
		return apierr.CodeInternal
	}
}
