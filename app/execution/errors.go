package execution

import "errors"

// Sentinel errors; handlers map them onto API error codes.
var (
	// ErrNotFound: the execution, agent, manifest or deployment is absent.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrConflict: the execution's phase does not allow the operation.
	ErrConflict = errors.New("conflict")
)
