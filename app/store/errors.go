package store

import "errors"

// Sentinel errors. Drivers map their native errors onto these at the seam.
var (
	// ErrNotFound means the named record does not exist in the tenant.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means a create named a record that exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict means a write named a stale resourceVersion.
	ErrConflict = errors.New("conflict: the object has been modified")
	// ErrGone means a change-log resume point is older than what is retained.
	ErrGone = errors.New("resource version too old: history no longer retained")
	// ErrInvalidContinue means a continue token was malformed, tampered with,
	// or issued for a different query.
	ErrInvalidContinue = errors.New("invalid continue token")
	// ErrNoTenant means a call was made without a tenant.
	ErrNoTenant = errors.New("tenant is required")
	// ErrInvalid means a record given to a write is malformed.
	ErrInvalid = errors.New("invalid record")
)
