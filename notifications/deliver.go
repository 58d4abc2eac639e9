package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/jobs"
)

// Approval is what every message says about an approval: the payload of
// webhooks (data), the body of e-mails and chat messages.
type Approval struct {
	Tenant     string         `json:"tenant"`
	Namespace  string         `json:"namespace"`
	Name       string         `json:"approval"`
	ToolCall   string         `json:"toolCall,omitempty"`
	Agent      string         `json:"agent"`
	Tool       string         `json:"tool"`
	SideEffect string         `json:"sideEffect"`
	Input      map[string]any `json:"input,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Policy     string         `json:"policy,omitempty"`
	Rule       string         `json:"rule,omitempty"`
	ExpiresAt  time.Time      `json:"expiresAt"`
	// URL opens the approval's page (for e-mail, the recipient's signed
	// link).
	URL string `json:"url,omitempty"`
}

// ApprovalOf reads what messages say about an Approval record.
func ApprovalOf(tenant string, ap *resource.Object) (Approval, error) {
	spec, err := resource.DecodeSpec[resource.ApprovalSpec](ap)
	if err != nil {
		return Approval{}, fmt.Errorf("decode approval %s: %w", ap.Metadata.Name, err)
	}
	exp, _ := time.Parse(time.RFC3339, spec.ExpiresAt)
	return Approval{Tenant: tenant, Namespace: ap.Metadata.Namespace, Name: ap.Metadata.Name, ToolCall: spec.ToolCallRef.Name,
		Agent: spec.AgentRef.Name, Tool: spec.ToolRef.Name, SideEffect: spec.SideEffect, Input: spec.Input, Reason: spec.Reason,
		Policy: spec.Policy, Rule: spec.Rule, ExpiresAt: exp}, nil
}

// InputJSON is the input, indented, as messages show it.
func (a Approval) InputJSON() string {
	if len(a.Input) == 0 {
		return "{}"
	}
	b, err := json.MarshalIndent(a.Input, "", "  ")
	if err != nil {
		return "(input cannot be shown)"
	}
	return string(b)
}

// PageURL is the console page of the approval.
func (s *Service) PageURL(a Approval) string {
	return s.cfg.PublicURL + "/approvals/" + url.PathEscape(a.Namespace) + "/" + url.PathEscape(a.Name)
}

// delivery is one delivery's resolved configuration: the channel and its
// secrets, read in one transaction.
type delivery struct {
	approval Approval
	pending  bool
	channel  resource.NotificationChannelSpec
	// secrets by role: "password", "signing", "webhookURL".
	secrets map[string]string
}

// errSkip ends a delivery with nothing to send.
var errSkip = errors.New("nothing to send")

// load reads the approval, the channel and its secrets.
func (s *Service) load(ctx context.Context, a jobs.NotifyArgs) (*delivery, error) {
	d := &delivery{secrets: map[string]string{}}
	err := s.cfg.Store.View(ctx, a.Tenant, func(ctx context.Context, r store.Reader) error {
		ap, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: a.Namespace, Name: a.Approval})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("approval %s/%s is gone: %w", a.Namespace, a.Approval, errSkip)
		}
		if err != nil {
			return err
		}
		if d.approval, err = ApprovalOf(a.Tenant, ap); err != nil {
			return err
		}
		st, _ := ap.Status["status"].(string)
		d.pending = st == gateway.ApprovalPending
		d.channel, d.secrets, err = s.loadChannel(ctx, r, a.Tenant, a.Namespace, a.Channel)
		return err
	})
	return d, err
}

// loadChannel reads a channel and resolves its secrets by role:
// "password", "signing", "webhookURL", "botToken".
func (s *Service) loadChannel(ctx context.Context, r store.Reader, tenant, ns, name string) (resource.NotificationChannelSpec, map[string]string, error) {
	var spec resource.NotificationChannelSpec
	ch, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindNotificationChannel, Namespace: ns, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return spec, nil, fmt.Errorf("channel %s/%s does not exist: %w", ns, name, errSkip)
	}
	if err != nil {
		return spec, nil, err
	}
	if spec, err = resource.DecodeSpec[resource.NotificationChannelSpec](ch); err != nil {
		return spec, nil, fmt.Errorf("decode channel %s: %w", name, err)
	}
	refs := map[string]*resource.SecretRef{}
	switch {
	case spec.Type == resource.ChannelEmail && spec.Email != nil:
		refs["password"] = spec.Email.SMTP.PasswordSecretRef
	case spec.Type == resource.ChannelWebhook && spec.Webhook != nil:
		refs["signing"] = &spec.Webhook.SigningSecretRef
	case spec.Type == resource.ChannelSlack && spec.Slack != nil:
		refs["signing"], refs["webhookURL"] = &spec.Slack.SigningSecretRef, &spec.Slack.WebhookURLSecretRef
		refs["botToken"] = spec.Slack.BotTokenSecretRef
	default:
		return spec, nil, fmt.Errorf("channel %s of type %q has no settings", name, spec.Type)
	}
	secrets := map[string]string{}
	for role, ref := range refs {
		if ref == nil {
			continue
		}
		v, err := s.cfg.Secrets.Resolve(ctx, r, tenant, ns, ref.Name, ref.Key)
		if err != nil {
			return spec, nil, err
		}
		secrets[role] = v
	}
	return spec, secrets, nil
}

// Deliver makes one attempt to deliver a notification and records it. It
// implements jobs.Notifier. An approval decided or expired before the
// attempt is not announced any more.
func (s *Service) Deliver(ctx context.Context, a jobs.NotifyArgs, attempt int, final bool) error {
	d, err := s.load(ctx, a)
	if errors.Is(err, errSkip) {
		s.log.InfoContext(ctx, "notification not sent", "approval", a.Approval, "channel", a.Channel, "why", err)
		return nil
	}
	rec := store.Delivery{Namespace: a.Namespace, Approval: a.Approval, Channel: a.Channel, Recipient: a.Recipient, Attempt: attempt}
	if err == nil {
		rec.Type = d.channel.Type
		if !d.pending {
			return nil
		}
		err = s.send(ctx, a, d)
	}
	if rec.Recipient == "" && d != nil {
		rec.Recipient = recipientOf(d)
	}
	rec.Outcome = store.DeliveryDelivered
	if err != nil {
		rec.Outcome, rec.Error = store.DeliveryFailed, err.Error()
		if final {
			rec.Outcome = store.DeliveryGaveUp
		}
	}
	rec.Time = s.cfg.Now().UTC()
	if rerr := s.cfg.Store.Update(ctx, a.Tenant, func(ctx context.Context, tx store.Tx) error {
		return store.DeliveryInsert(ctx, tx, rec)
	}); rerr != nil {
		// A delivered message is not sent again because its record
		// could not be written.
		s.log.ErrorContext(ctx, "record a delivery attempt", "approval", a.Approval, "channel", a.Channel, "err", rerr)
	}
	if err != nil {
		return fmt.Errorf("notifications: deliver %s on %s (attempt %d): %w", a.Approval, a.Channel, attempt, err)
	}
	return nil
}

// recipientOf is what a delivery record names as the recipient of a
// webhook or chat message: the host it was posted to, never the URL (a
// Slack webhook URL is a credential).
func recipientOf(d *delivery) string {
	raw := d.secrets["webhookURL"]
	if d.channel.Webhook != nil {
		raw = d.channel.Webhook.URL
	}
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// send delivers on the channel's medium.
func (s *Service) send(ctx context.Context, a jobs.NotifyArgs, d *delivery) error {
	switch d.channel.Type {
	case resource.ChannelEmail:
		d.approval.URL = s.LinkURL(d.approval, a.Recipient)
		return s.sendEmail(ctx, d.channel.Email, d.secrets["password"], a.Recipient, d.approval)
	case resource.ChannelWebhook:
		d.approval.URL = s.PageURL(d.approval)
		return s.sendWebhook(ctx, d.channel.Webhook.URL, d.secrets["signing"], d.approval, a)
	case resource.ChannelSlack:
		d.approval.URL = s.PageURL(d.approval)
		return s.sendSlack(ctx, d.secrets["webhookURL"], d.approval)
	}
	return fmt.Errorf("unknown channel type %q", d.channel.Type)
}
