package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
)

// LocalTenant is the single tenant of local mode.
const LocalTenant = "default"

// DefaultNamespace is created in every new tenant.
const DefaultNamespace = "default"

// Bootstrap prepares a fresh local-mode store in one transaction: tenant
// "default", namespace "default", environments dev, staging and prod, and an
// admin API key whose secret is returned once (only its hash is stored).
// When the store was already bootstrapped it returns created=false and no
// key.
func Bootstrap(ctx context.Context, st store.Store, now func() time.Time) (adminKey string, created bool, err error) {
	if now == nil {
		now = time.Now
	}
	nsKey := resource.Key{Kind: resource.KindNamespace, Name: DefaultNamespace}
	err = st.View(ctx, LocalTenant, func(ctx context.Context, r store.Reader) error {
		_, err := r.ResourceGet(ctx, nsKey)
		return err
	})
	switch {
	case err == nil:
		return "", false, nil
	case !errors.Is(err, store.ErrNotFound):
		return "", false, fmt.Errorf("check bootstrap state: %w", err)
	}

	secret, hash, err := auth.NewAPIKeySecret()
	if err != nil {
		return "", false, err
	}
	t := now().UTC()
	rec := store.TenantRecord{ID: LocalTenant, DisplayName: "Local", CreatedAt: t}
	// The directory entry keeps signup from ever claiming "default". It is
	// written first and outside the tenant transaction (SQLite has one
	// writer); a rerun after a failure finds it and carries on.
	if err := st.TenantCreate(ctx, rec); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return "", false, fmt.Errorf("register tenant %q: %w", LocalTenant, err)
	}
	err = st.Update(ctx, LocalTenant, func(ctx context.Context, tx store.Tx) error {
		if err := tenants.Seed(ctx, tx, rec, ""); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{
			ID: "admin", Tenant: LocalTenant, Name: "admin", SecretHash: hash,
			Namespace: auth.AllNamespaces, Role: auth.RoleOwner, CreatedAt: t,
		})
	})
	if err != nil {
		return "", false, fmt.Errorf("bootstrap local mode: %w", err)
	}
	return secret, true, nil
}
