package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Paths of the inbound decision endpoints, on the control plane. The
// tenant is in the path because the caller has no Warden credential: the
// channel's signing secret is the credential.
const (
	WebhookDecisionPath = "/v1/notifications/:tenant/:namespace/:channel/decisions"
	SlackActionPath     = "/v1/notifications/:tenant/:namespace/:channel/slack"
)

// maxInbound bounds an inbound body.
const maxInbound = 64 << 10

// Register mounts the inbound decision endpoints on r.
func (s *Service) Register(r fiber.Router) {
	r.Post(WebhookDecisionPath, s.webhookDecision)
	r.Post(SlackActionPath, s.slackAction)
}

// inbound reads the path and the channel's secrets; the channel must be of
// type typ.
func (s *Service) inbound(c *fiber.Ctx, typ string) (tenant, ns, name string, spec resource.NotificationChannelSpec, secrets map[string]string, err error) {
	tenant, ns, name = c.Params("tenant"), c.Params("namespace"), c.Params("channel")
	if len(c.Body()) > maxInbound {
		return "", "", "", spec, nil, apierr.New(apierr.CodePayloadTooLarge, "the body is larger than %d bytes", maxInbound)
	}
	notFound := apierr.New(apierr.CodeNotFound, "no %s channel %q in namespace %q", typ, name, ns)
	if store.CheckTenant(tenant) != nil || ns == "" || name == "" {
		return "", "", "", spec, nil, notFound
	}
	err = s.cfg.Store.View(c.UserContext(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		spec, secrets, err = s.loadChannel(ctx, r, tenant, ns, name)
		return err
	})
	if err != nil || spec.Type != typ {
		// An unknown tenant, channel or secret all answer the same.
		if err != nil && !errors.Is(err, errSkip) {
			s.log.WarnContext(c.UserContext(), "inbound decision: channel unusable", "namespace", ns, "channel", name, "err", err)
		}
		return "", "", "", spec, nil, notFound
	}
	return tenant, ns, name, spec, secrets, nil
}

// webhookDecision takes an approval.decision callback signed per Standard
// Webhooks with the channel's secret.
func (s *Service) webhookDecision(c *fiber.Ctx) error {
	tenant, ns, name, _, secrets, err := s.inbound(c, resource.ChannelWebhook)
	if err != nil {
		return err
	}
	actor := "webhook:" + ns + "/" + name
	body := c.Body()
	if err := VerifyWebhook(secrets["signing"], http.Header(c.GetReqHeaders()), body, s.cfg.Now()); err != nil {
		s.refusal(c.UserContext(), tenant, ns, actor, "approvals/decide", "NotificationChannel/"+name, "webhook refused: "+err.Error())
		return apierr.New(apierr.CodeUnauthenticated, "webhook refused: %v", err)
	}
	var p WebhookPayload
	var d WebhookDecision
	if err := json.Unmarshal(body, &p); err != nil || p.Type != EventApprovalDecision {
		return apierr.New(apierr.CodeInvalidRequest, `the body must be {"type": %q, "data": {…}}`, EventApprovalDecision)
	}
	if err := json.Unmarshal(p.Data, &d); err != nil || d.Approval == "" || d.DecidedBy == "" {
		return apierr.New(apierr.CodeInvalidRequest, "data must name approval, decision and decidedBy")
	}
	out, err := s.decide(c.UserContext(), tenant, ns, d.Approval, strings.ToLower(d.DecidedBy), actor,
		api.DecideRequest{Decision: d.Decision, Rationale: d.Rationale, Channel: gateway.ChannelWebhook})
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// slackAction takes a Slack-format interaction callback (a click on
// Approve or Deny), verified with the channel's signing secret.
func (s *Service) slackAction(c *fiber.Ctx) error {
	tenant, ns, name, spec, secrets, err := s.inbound(c, resource.ChannelSlack)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	body := c.Body()
	if err := VerifySlack(secrets["signing"], http.Header(c.GetReqHeaders()), body, s.cfg.Now()); err != nil {
		s.refusal(ctx, tenant, ns, "slack:"+ns+"/"+name, "approvals/decide", "NotificationChannel/"+name, "slack callback refused: "+err.Error())
		return apierr.New(apierr.CodeUnauthenticated, "slack callback refused: %v", err)
	}
	in, decision, apNS, approval, err := ParseSlackInteraction(body)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "%v", err)
	}
	actor := "slack:" + in.User.ID
	if apNS != ns {
		s.refusal(ctx, tenant, ns, actor, "approvals/decide", "Approval/"+approval, "slack callback names namespace "+apNS+", not the channel's")
		return apierr.New(apierr.CodeForbidden, "channel %q decides approvals of namespace %q only", name, ns)
	}
	email, err := s.slackEmail(ctx, in, spec.Slack.APIURL, secrets["botToken"])
	if err != nil {
		s.refusal(ctx, tenant, ns, actor, "approvals/decide", "Approval/"+approval, "slack user not mapped: "+err.Error())
		return apierr.New(apierr.CodeForbidden, "the Slack user cannot be mapped to a Warden member: %v", err)
	}
	rationale := "decided in chat"
	if in.User.Username != "" {
		rationale += " by @" + in.User.Username
	}
	out, err := s.decide(ctx, tenant, ns, approval, email, actor,
		api.DecideRequest{Decision: decision, Rationale: rationale, Channel: gateway.ChannelSlack})
	if err != nil {
		return err
	}
	verb := map[string]string{"approve": "Approved", "deny": "Denied"}[decision]
	return c.JSON(fiber.Map{"text": fmt.Sprintf("%s by %s.", verb, email), "replace_original": true, "approval": out.Metadata.Name})
}

// decide makes the decision of the member with e-mail email through the
// Decider, the API's path: the same authorization, audit and first-wins
// rule. A person who is not a member is refused and audited.
func (s *Service) decide(ctx context.Context, tenant, ns, approval, email, actor string, req api.DecideRequest) (*resource.Object, error) {
	if s.cfg.Decider == nil {
		return nil, apierr.New(apierr.CodeUnavailable, "approvals cannot be decided on this server")
	}
	p, err := s.memberPrincipal(ctx, tenant, email)
	if errors.Is(err, auth.ErrForbidden) {
		s.refusal(ctx, tenant, ns, actor, "approvals/decide", "Approval/"+approval, email+" is not a member")
		return nil, apierr.New(apierr.CodeForbidden, "%s is not a member of this tenant", email)
	}
	if err != nil {
		return nil, err
	}
	return s.cfg.Decider.Decide(ctx, p, ns, approval, req, false)
}
