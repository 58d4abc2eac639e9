package tenants

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Service signs tenants up and administers their people, namespaces and
// role bindings. It is safe for concurrent use.
type Service struct {
	st     store.Store
	az     Authorizer
	now    func() time.Time
	logger *slog.Logger
	// inviter e-mails invitations (WithInviter); nil sends none.
	inviter Inviter
}

// Authorizer is app/authz's decision, asked before every change of people,
// namespaces and role bindings. A Service without one lets only the system
// principal change them.
type Authorizer interface {
	Authorize(ctx context.Context, p auth.Principal, verb, namespace, object string) error
}

// New returns a Service over st. now defaults to time.Now and logger to
// slog.Default().
func New(st store.Store, az Authorizer, now func() time.Time, logger *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{st: st, az: az, now: now, logger: logger}
}

// SignupRequest asks for a new tenant.
type SignupRequest struct {
	// TenantID is the tenant's DNS-1123 name, unique across the deployment.
	TenantID string `json:"tenantId"`
	// DisplayName is shown in the console; defaults to TenantID.
	DisplayName string `json:"displayName,omitempty"`
	// OwnerEmail is the first owner's e-mail (the address they sign in with).
	OwnerEmail string `json:"ownerEmail"`
	// OwnerName is the owner's name as shown in the console.
	OwnerName string `json:"ownerName,omitempty"`
}

// reservedTenants cannot be signed up for: "default" is local mode's tenant
// and the rest would be confusing in URLs and logs.
var reservedTenants = map[string]bool{"default": true, "system": true, "warden": true, "admin": true, "www": true, "api": true}

// Signup creates a tenant: its directory entry, then in ONE tenant
// transaction the Tenant resource (spec.owner), namespace "default", the
// environments dev, staging and prod, and the owner as an active member.
// When the transaction fails the directory entry is removed again, so
// nothing is half written. A taken id answers Conflict "tenant name taken".
func (s *Service) Signup(ctx context.Context, req SignupRequest) (*store.TenantRecord, error) {
	req.TenantID = strings.TrimSpace(req.TenantID)
	req.DisplayName = strings.TrimSpace(req.DisplayName)
	req.OwnerName = strings.TrimSpace(req.OwnerName)
	email, err := NormalizeEmail(req.OwnerEmail)
	var problems []string
	if err != nil {
		problems = append(problems, "ownerEmail: "+err.Error())
	}
	if p := tenantIDProblem(req.TenantID); p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return nil, apierr.New(apierr.CodeInvalidRequest, "signup: %s", strings.Join(problems, "; ")).
			WithDetails(map[string]any{"problems": problems})
	}
	if req.DisplayName == "" {
		req.DisplayName = req.TenantID
	}
	now := s.now().UTC()
	rec := store.TenantRecord{ID: req.TenantID, DisplayName: req.DisplayName, CreatedAt: now}

	if err := s.st.TenantCreate(ctx, rec); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return nil, apierr.New(apierr.CodeConflict, "tenant name taken: %q already exists, choose another name", req.TenantID)
		}
		return nil, fmt.Errorf("signup %q: register tenant: %w", req.TenantID, err)
	}

	err = s.st.Update(ctx, rec.ID, func(ctx context.Context, tx store.Tx) error {
		if err := Seed(ctx, tx, rec, email); err != nil {
			return err
		}
		return tx.MemberUpsert(ctx, store.Member{Tenant: rec.ID, Email: email, Name: req.OwnerName, Owner: true,
			Status: store.MemberActive, InvitedBy: "system:signup", CreatedAt: now})
	})
	if err != nil {
		s.compensate(ctx, rec.ID, err)
		return nil, mapErr("signup "+req.TenantID, err)
	}
	s.logger.InfoContext(ctx, "tenant signed up", "tenant", rec.ID)
	return &rec, nil
}

// tenantIDProblem says what is wrong with a tenant id asked for; "" when
// nothing is.
func tenantIDProblem(id string) string {
	switch {
	case id == "":
		return "tenantId: required"
	case !resource.IsDNS1123Label(id):
		return fmt.Sprintf("tenantId: %q is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)", id)
	case reservedTenants[id]:
		return fmt.Sprintf("tenantId: %q is reserved", id)
	}
	return ""
}

// CheckSignup reports whether a sign-up for tenant id could succeed now,
// before the person proves their e-mail address at the identity provider:
// InvalidRequest for an invalid or reserved id, Conflict "tenant name
// taken" for one that exists. Signup checks again, since the id may be
// taken meanwhile.
func (s *Service) CheckSignup(ctx context.Context, id string) error {
	id = strings.TrimSpace(id)
	if p := tenantIDProblem(id); p != "" {
		return apierr.New(apierr.CodeInvalidRequest, "signup: %s", p).WithDetails(map[string]any{"problems": []string{p}})
	}
	_, err := s.st.TenantGet(ctx, id)
	switch {
	case err == nil:
		return apierr.New(apierr.CodeConflict, "tenant name taken: %q already exists, choose another name", id)
	case errors.Is(err, store.ErrNotFound):
		return nil
	default:
		return fmt.Errorf("signup %q: look up tenant: %w", id, err)
	}
}

// compensate removes the directory entry of a signup whose tenant
// transaction failed. It runs on a context that outlives a cancelled
// request, because leaving the entry would block the name forever.
func (s *Service) compensate(ctx context.Context, id string, cause error) {
	d, ok := s.st.(tenantDeleter)
	if !ok {
		s.logger.ErrorContext(ctx, "signup failed and the store cannot delete the directory entry; the tenant name stays taken until an operator removes it",
			"tenant", id, "cause", cause)
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.TenantDelete(cctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.logger.ErrorContext(ctx, "signup failed and removing the directory entry failed too", "tenant", id, "cause", cause, "err", err)
	}
}

// NormalizeEmail trims and lower-cases an e-mail address and checks that it
// is a plain address ("a@b.example", no display name).
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", errors.New("required")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", fmt.Errorf("%q is not a valid e-mail address", s)
	}
	_, domain, _ := strings.Cut(s, "@")
	if !strings.Contains(domain, ".") && domain != "localhost" {
		return "", fmt.Errorf("%q has no domain", s)
	}
	return s, nil
}
