package tenants

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Environments every new tenant starts with, in promotion order.
var seedEnvironments = []struct{ name, next string }{{"dev", "staging"}, {"staging", "prod"}, {"prod", ""}}

// SeedObjects returns the first resources of a tenant: the Tenant itself
// (spec.owner when owner is not empty), namespace "default" and the
// environments dev → staging → prod in it.
func SeedObjects(tenant store.TenantRecord, owner string) []*resource.Object {
	tspec := map[string]any{}
	if tenant.DisplayName != "" {
		tspec["displayName"] = tenant.DisplayName
	}
	if owner != "" {
		tspec["owner"] = owner
	}
	objs := []*resource.Object{
		{APIVersion: resource.GroupVersion, Kind: resource.KindTenant, Metadata: resource.ObjectMeta{Name: tenant.ID}, Spec: tspec},
		{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: DefaultNamespace}, Spec: map[string]any{"displayName": "Default"}},
	}
	for _, env := range seedEnvironments {
		spec := map[string]any{"tier": env.name}
		if env.next != "" {
			spec["promotesTo"] = env.next
		}
		objs = append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindEnvironment,
			Metadata: resource.ObjectMeta{Name: env.name, Namespace: DefaultNamespace}, Spec: spec})
	}
	return objs
}

// Seed writes a new tenant's first resources (SeedObjects) inside tx, which
// must be a transaction of tenant.ID, and records a ResourceApplied event for
// each. It is shared by signup and by local mode's server.Bootstrap, so both
// start a tenant the same way. Events carry tenant.CreatedAt (now when zero).
// Any error leaves the caller's transaction to roll back.
func Seed(ctx context.Context, tx store.Tx, tenant store.TenantRecord, owner string) error {
	t := tenant.CreatedAt
	if t.IsZero() {
		t = time.Now()
	}
	t = t.UTC()
	for _, o := range SeedObjects(tenant, owner) {
		if err := createResource(ctx, tx, tenant.ID, o, t, "system:seed"); err != nil {
			return fmt.Errorf("seed tenant %q: %w", tenant.ID, err)
		}
	}
	return nil
}

// createResource defaults, validates and creates o, and records the event.
func createResource(ctx context.Context, tx store.Tx, tenant string, o *resource.Object, t time.Time, actor string) error {
	resource.Default(o)
	if errs := resource.Validate(o); len(errs) > 0 {
		return fmt.Errorf("%s: %w", o.Key(), errs)
	}
	stored, err := tx.ResourceCreate(ctx, o)
	if err != nil {
		return fmt.Errorf("create %s: %w", o.Key(), err)
	}
	return appliedEvent(ctx, tx, tenant, stored, t, actor, "created")
}

func appliedEvent(ctx context.Context, tx store.Tx, tenant string, o *resource.Object, t time.Time, actor, action string) error {
	if _, err := tx.EventInsert(ctx, events.Event{Type: events.ResourceApplied, Time: t, Tenant: tenant,
		Namespace: o.Metadata.Namespace, Subject: o.Kind + "/" + o.Metadata.Name,
		Data: map[string]any{"action": action, "actor": actor}}); err != nil {
		return fmt.Errorf("record event for %s: %w", o.Key(), err)
	}
	return nil
}
