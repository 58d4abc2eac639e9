package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
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
	objs := []*resource.Object{
		{APIVersion: resource.GroupVersion, Kind: resource.KindTenant, Metadata: resource.ObjectMeta{Name: LocalTenant}, Spec: map[string]any{"displayName": "Local"}},
		{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: DefaultNamespace}, Spec: map[string]any{"displayName": "Default"}},
	}
	for _, env := range []struct{ name, next string }{{"dev", "staging"}, {"staging", "prod"}, {"prod", ""}} {
		spec := map[string]any{"tier": env.name}
		if env.next != "" {
			spec["promotesTo"] = env.next
		}
		objs = append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindEnvironment,
			Metadata: resource.ObjectMeta{Name: env.name, Namespace: DefaultNamespace}, Spec: spec})
	}
	err = st.Update(ctx, LocalTenant, func(ctx context.Context, tx store.Tx) error {
		for _, o := range objs {
			resource.Default(o)
			if errs := resource.Validate(o); len(errs) > 0 {
				return fmt.Errorf("bootstrap %s: %w", o.Key(), errs)
			}
			stored, err := tx.ResourceCreate(ctx, o)
			if err != nil {
				return fmt.Errorf("bootstrap %s: %w", o.Key(), err)
			}
			if _, err := tx.EventInsert(ctx, events.Event{Type: events.ResourceApplied, Time: t, Tenant: LocalTenant,
				Namespace: stored.Metadata.Namespace, Subject: stored.Kind + "/" + stored.Metadata.Name,
				Data: map[string]any{"action": "created", "actor": "system:bootstrap"}}); err != nil {
				return fmt.Errorf("record bootstrap event: %w", err)
			}
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
