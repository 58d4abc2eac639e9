package scan

import "errors"

// ErrInvalidOptions means Options (or a mode string) failed validation;
// the wrapped message names the field.
var ErrInvalidOptions = errors.New("scan: invalid options")
