package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/store"
)

// maxGuardKeys bounds the refusals a TenantGuard remembers within one
// minute; past it, further refusals that minute are logged but not
// audited, so neither memory nor the audit log grows with a flood.
const maxGuardKeys = 4096

// maxGuardTenant is the longest tenant name a refusal record repeats; a
// longer header is cut (tenant names are DNS-1123 labels, 63 at most).
const maxGuardTenant = 63

// TenantGuard refuses a credential that names, in HeaderTenant, a tenant
// other than its own, and records each refusal in the caller's own tenant's
// audit log, at most once per caller, tenant named and minute. Every
// listener that reads HeaderTenant checks it through one guard (its
// Authenticator's, AuthenticateTenant). Safe for concurrent use.
type TenantGuard struct {
	store store.Store
	now   func() time.Time
	log   *slog.Logger

	mu     sync.Mutex
	minute int64
	seen   map[guardKey]bool
}

type guardKey struct{ tenant, subject, want string }

// NewTenantGuard returns a guard writing to st. now defaults to time.Now
// and log to slog.Default().
func NewTenantGuard(st store.Store, now func() time.Time, log *slog.Logger) *TenantGuard {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &TenantGuard{store: st, now: now, log: log, seen: map[guardKey]bool{}}
}

// Check returns nil when want is empty or p's own tenant. Otherwise it
// audits the refusal (coalesced) and returns 403 Forbidden in the
// documented error shape. where names the listener ("control plane", "tool
// gateway", …) in the record.
func (g *TenantGuard) Check(ctx context.Context, p Principal, want, where string) error {
	if want == "" || want == p.Tenant {
		return nil
	}
	shown := want
	if len(shown) > maxGuardTenant {
		shown = shown[:maxGuardTenant] + "…"
	}
	refusal := apierr.New(apierr.CodeForbidden, "%s does not act in tenant %q (%s)", p.Subject, shown, HeaderTenant)
	if g.first(guardKey{p.Tenant, p.Subject, shown}) {
		rec := audit.Record{Time: g.now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: VerbActIn, Resource: "tenants/" + shown,
			Outcome: audit.OutcomeDenied, Policy: HeaderTenant, Reason: apierr.CodeForbidden + ": not a member of the tenant named, via " + where}
		err := g.store.Update(context.WithoutCancel(ctx), p.Tenant, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.AuditInsert(ctx, rec)
			return err
		})
		if err != nil {
			// The refusal stands whether or not it could be recorded.
			g.log.ErrorContext(ctx, "audit a foreign-tenant refusal", "err", err, "tenant", p.Tenant)
		}
	}
	g.log.InfoContext(ctx, "foreign tenant refused", "tenant", p.Tenant, "subject", p.Subject, "where", where)
	return refusal
}

// first reports whether key is the first refusal of the current minute,
// remembering it; false past maxGuardKeys.
func (g *TenantGuard) first(k guardKey) bool {
	minute := g.now().Unix() / 60
	g.mu.Lock()
	defer g.mu.Unlock()
	if minute != g.minute {
		g.minute, g.seen = minute, map[guardKey]bool{}
	}
	if g.seen[k] || len(g.seen) >= maxGuardKeys {
		return false
	}
	g.seen[k] = true
	return true
}

// VerbActIn is the audit verb of a request to act in a tenant (HeaderTenant).
const VerbActIn = "act-in"

// AuthenticateTenant authenticates an Authorization header value for a
// request that may name its tenant in HeaderTenant (want, "" for none):
// the credential must belong to that tenant, and a refusal is audited
// through the Authenticator's TenantGuard. where names the listener.
func (a *Authenticator) AuthenticateTenant(ctx context.Context, header, want, where string) (Principal, error) {
	p, err := a.Authenticate(WithRequestedTenant(ctx, want), header)
	if err != nil {
		return Principal{}, err
	}
	if err := a.guard.Check(ctx, p, want, where); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// WithTenantGuard makes a share g, so that refusals seen by every listener
// of a process are coalesced together; it returns a.
func (a *Authenticator) WithTenantGuard(g *TenantGuard) *Authenticator {
	a.guard = g
	return a
}

// TenantGuard returns the guard a uses.
func (a *Authenticator) TenantGuard() *TenantGuard { return a.guard }
