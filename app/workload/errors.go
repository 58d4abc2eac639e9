package workload

import (
	"errors"
	"fmt"

	"github.com/warden-dev/warden/app/auth"
)

// ErrInvalidToken is wrapped by every refusal of a token. It wraps
// auth.ErrUnauthenticated, so the API answers 401.
var ErrInvalidToken = fmt.Errorf("%w: invalid workload token", auth.ErrUnauthenticated)

// ErrNoSigningKey means the issuer holds no key it can sign with.
var ErrNoSigningKey = errors.New("workload identity: no usable signing key")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidToken}, args...)...)
}
