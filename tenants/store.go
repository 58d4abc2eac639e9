package tenants

import "context"

// tenantDeleter removes a directory entry again. Signup uses it to undo
// TenantCreate when the tenant transaction fails; a driver without it leaves
// the entry behind, and Signup logs that loudly.
type tenantDeleter interface {
	TenantDelete(ctx context.Context, id string) error
}
