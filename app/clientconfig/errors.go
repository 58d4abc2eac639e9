package clientconfig

import "errors"

// ErrNoContext is returned when a named context does not exist in the file.
var ErrNoContext = errors.New("no such context in the config file")
