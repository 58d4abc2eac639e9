package oidc

import (
	"context"
	"errors"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/store"
)

// auditSignin writes a sign-in record (verb signin, resource sessions) in
// rec.Tenant; a failure to write is logged, never shown to the person.
func (h *Handler) auditSignin(ctx context.Context, rec audit.Record) {
	h.auditSession(ctx, "signin", rec)
}

// auditSession writes a record of verb on resource sessions in rec.Tenant.
func (h *Handler) auditSession(ctx context.Context, verb string, rec audit.Record) {
	rec.Time, rec.Verb, rec.Resource = h.now().UTC(), verb, "sessions"
	err := h.st.Update(context.WithoutCancel(ctx), rec.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	})
	if err != nil {
		h.log.ErrorContext(ctx, "audit a session", "verb", verb, "err", err, "tenant", rec.Tenant)
	}
}

// auditFailedSignin records a refused callback in tenant when the tenant
// exists: denied for a refusal (403), failed otherwise, with the error's
// code as the reason. email is "" when the provider gave none.
func (h *Handler) auditFailedSignin(ctx context.Context, tenant, email, via string, cause error) {
	if _, err := h.st.TenantGet(ctx, tenant); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.ErrorContext(ctx, "audit a failed sign-in: read tenant", "err", err)
		}
		return
	}
	rec := audit.Record{Tenant: tenant, Actor: "anonymous", Outcome: audit.OutcomeFailed, Policy: "oidc:" + via, Reason: apierr.CodeInternal}
	if email != "" {
		rec.Actor = "user:" + email
	}
	if e, ok := apierr.As(cause); ok {
		rec.Reason = e.Code + ": " + e.Message
		if e.Status() == 403 {
			rec.Outcome = audit.OutcomeDenied
		}
	}
	h.auditSignin(ctx, rec)
}
