package secret

import "errors"

// Sentinel errors of the secret broker. Their messages never contain key
// material or plaintext.
var (
	// ErrMasterKey means the master key could not be loaded or is malformed.
	ErrMasterKey = errors.New("master key")
	// ErrUnknownMasterKey means a sealed value was wrapped by a master key
	// the keyring does not hold (a wrong or already rotated-away key).
	ErrUnknownMasterKey = errors.New("sealed value was encrypted with a master key this keyring does not hold")
	// ErrMalformed means a sealed value is not in a format this version
	// understands.
	ErrMalformed = errors.New("malformed sealed value")
	// ErrDecrypt means authentication failed: the value was tampered with or
	// moved to another secret.
	ErrDecrypt = errors.New("sealed value failed authentication (tampered, or moved from another secret)")
	// ErrWrongMasterKey means the master key is not the one the store's
	// installation was set up with.
	ErrWrongMasterKey = errors.New("wrong master key")
	// ErrNotFound means the Secret or the key inside it does not exist.
	ErrNotFound = errors.New("secret not found")
)
