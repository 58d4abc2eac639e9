package agbom

import "errors"

// Sentinel errors of the package; the HTTP layer maps them onto API codes.
var (
	// ErrNotFound means the agent, or the manifest of the generation
	// asked for, does not exist.
	ErrNotFound = errors.New("agbom: not found")
	// ErrInvalid means a request named an unknown format or a bad
	// generation.
	ErrInvalid = errors.New("agbom: invalid request")
)
