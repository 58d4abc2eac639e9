// Package server wires Warden's services onto their listeners.
package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// Config configures a Warden process.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// ControlAddr is the control plane listener, e.g. "127.0.0.1:8080".
	ControlAddr string
	Now         func() time.Time
}

// Run serves until ctx is cancelled.
// PLACEHOLDER: implemented by the API work.
func Run(ctx context.Context, cfg Config) error { return errors.New("not implemented") }

// Bootstrap prepares a fresh local-mode store: tenant "default", namespace
// "default", environments dev, staging and prod, and an admin API key whose
// secret is returned once. When the store was already bootstrapped it returns
// created=false and no key.
// PLACEHOLDER: implemented by the API work.
func Bootstrap(ctx context.Context, st store.Store, now func() time.Time) (adminKey string, created bool, err error) {
	return "", false, errors.New("not implemented")
}
