package notifications

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// LinkView is what an e-mail link's page shows: the approval and, once
// decided, its outcome.
type LinkView struct {
	Claims   LinkClaims
	Approval Approval
	// Status is pending, approved, denied, expired or overridden.
	Status    string
	DecidedBy string
	DecidedAt string
	Rationale string
	Channel   string
	// Phase is the call's phase, when there is a call.
	Phase string
}

// OpenLink verifies an e-mail link and reads its approval. It decides
// nothing: mail scanners fetch links. A link that is not this Warden's,
// or altered, is refused and audited.
func (s *Service) OpenLink(ctx context.Context, token string) (LinkView, error) {
	c, err := s.verifyLink(ctx, token, "approvals/open-link")
	if err != nil {
		return LinkView{}, err
	}
	return s.linkView(ctx, c)
}

// DecideLink decides the link's approval as its recipient, through the
// gateway's Decide: the recipient must be a member allowed to decide in
// the namespace; the first decision wins and a link decides once.
func (s *Service) DecideLink(ctx context.Context, token, decision, rationale string) (LinkView, error) {
	c, err := s.verifyLink(ctx, token, "approvals/decide")
	if err != nil {
		return LinkView{}, err
	}
	if _, err := s.decide(ctx, c.Tenant, c.Namespace, c.Approval, c.Recipient, "email:"+c.Recipient,
		api.DecideRequest{Decision: decision, Rationale: rationale, Channel: gateway.ChannelEmail}); err != nil {
		v, verr := s.linkView(ctx, c)
		if verr != nil {
			return LinkView{}, err
		}
		return v, err
	}
	return s.linkView(ctx, c)
}

// verifyLink checks the token; refusals are audited in the tenant the
// token names when that tenant exists.
func (s *Service) verifyLink(ctx context.Context, token, verb string) (LinkClaims, error) {
	c, err := s.ParseLink(token)
	if err == nil {
		return c, nil
	}
	tenant := c.Tenant
	if tenant == "" {
		tenant = unverifiedTenant(token)
	}
	if tenant != "" && store.CheckTenant(tenant) == nil {
		if _, terr := s.cfg.Store.TenantGet(ctx, tenant); terr == nil {
			res := "Approval/" + c.Approval
			if c.Approval == "" {
				res = "Approval/?"
			}
			s.refusal(ctx, tenant, c.Namespace, "email-link", verb, res, "e-mail link refused: "+err.Error())
		}
	}
	return c, err
}

// unverifiedTenant reads the tenant a token claims without trusting it,
// only to file the refusal's audit record there.
func unverifiedTenant(token string) string {
	body, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return ""
	}
	var c LinkClaims
	if json.Unmarshal(raw, &c) != nil {
		return ""
	}
	return c.Tenant
}

func (s *Service) linkView(ctx context.Context, c LinkClaims) (LinkView, error) {
	v := LinkView{Claims: c}
	err := s.cfg.Store.View(ctx, c.Tenant, func(ctx context.Context, r store.Reader) error {
		ap, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: c.Namespace, Name: c.Approval})
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(apierr.CodeNotFound, "approval %q no longer exists", c.Approval)
		}
		if err != nil {
			return err
		}
		if v.Approval, err = ApprovalOf(c.Tenant, ap); err != nil {
			return err
		}
		str := func(k string) string { s, _ := ap.Status[k].(string); return s }
		v.Status, v.DecidedBy, v.DecidedAt, v.Rationale, v.Channel = str("status"), str("decidedBy"), str("decidedAt"), str("rationale"), str("channel")
		if v.Approval.ToolCall != "" {
			tc, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: c.Namespace, Name: v.Approval.ToolCall})
			if err == nil {
				v.Phase, _ = tc.Status["phase"].(string)
			}
		}
		return nil
	})
	return v, err
}
