// Package backend opens a store driver from a URL: sqlite://PATH or
// postgres://… (and later kubernetes://…).
package backend

import (
	"context"
	"errors"
	"log/slog"

	"github.com/warden-dev/warden/app/store"
)

// Options configures Open.
type Options struct {
	Logger *slog.Logger
}

// Open opens and migrates the store named by url.
// PLACEHOLDER: implemented by the store work.
func Open(ctx context.Context, url string, opts Options) (store.Store, error) {
	return nil, errors.New("not implemented")
}
