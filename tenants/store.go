package tenants

import (
	"context"

	"github.com/warden-dev/warden/app/store"
)

// Store is what the tenants service needs from storage: tenant-scoped
// transactions plus the global tenant directory and memberships. Once the
// drivers embed store.IdentityStore into store.Store, every store.Store
// satisfies it as is.
type Store interface {
	store.Store
	store.IdentityStore
}

// tenantDeleter removes a directory entry again. Signup uses it to undo
// TenantCreate when the tenant transaction fails; drivers that lack it leave
// the entry behind, and Signup logs that loudly.
type tenantDeleter interface {
	TenantDelete(ctx context.Context, id string) error
}

// memberTx returns the member methods of a tenant transaction. The drivers
// embed store.MemberTx into store.Tx, so the assertion only fails for a
// driver that has not implemented identity yet.
func memberTx(tx store.Tx) (store.MemberTx, error) {
	m, ok := tx.(store.MemberTx)
	if !ok {
		return nil, errNoIdentity
	}
	return m, nil
}

// memberReader returns the member reads of a tenant transaction.
func memberReader(r store.Reader) (store.MemberReader, error) {
	m, ok := r.(store.MemberReader)
	if !ok {
		return nil, errNoIdentity
	}
	return m, nil
}
