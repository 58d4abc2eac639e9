package notifications

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"sort"
	"strings"
	textTemplate "text/template"
	"time"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/jobs"
)

// InviteEnqueuer inserts invitation jobs in a store transaction;
// *jobs.Invitations is one.
type InviteEnqueuer interface {
	InviteTx(ctx context.Context, tx store.Tx, args jobs.InviteArgs) error
}

// InvitationRecord names the delivery records of an invitation (in place
// of an approval's name).
func InvitationRecord(email string) string { return "invitation:" + strings.ToLower(email) }

// InviteTx enqueues the invitation e-mail of email in tx. It implements
// tenants.Inviter.
func (s *Service) InviteTx(ctx context.Context, tx store.Tx, tenant, namespace, email, role, invitedBy string) error {
	if s.cfg.Invites == nil {
		return nil
	}
	return s.cfg.Invites.InviteTx(ctx, tx, jobs.InviteArgs{Tenant: tenant, Namespace: namespace, Email: email, Role: role, InvitedBy: invitedBy})
}

// Invitation is what an invitation e-mail says.
type Invitation struct {
	Tenant    string
	Namespace string
	Role      string
	InvitedBy string
	URL       string
}

var inviteText = textTemplate.Must(textTemplate.New("text").Parse(`{{.InvitedBy}} invited you to Warden, tenant {{.Tenant}}, as {{.Role}} of namespace {{.Namespace}}.

Sign in with your organization's account to accept:
{{.URL}}
`))

var inviteHTML = template.Must(template.New("html").Parse(`<!doctype html>
<html><body style="font-family:system-ui,sans-serif;color:#1a1a1a">
<p>{{.InvitedBy}} invited you to Warden, tenant <strong>{{.Tenant}}</strong>, as <strong>{{.Role}}</strong> of namespace <strong>{{.Namespace}}</strong>.</p>
<p><a href="{{.URL}}">Sign in to accept</a></p>
</body></html>
`))

// InvitationMessage renders an invitation e-mail.
func InvitationMessage(from, to string, in Invitation, now time.Time) ([]byte, error) {
	var text, html bytes.Buffer
	if err := inviteText.Execute(&text, in); err != nil {
		return nil, err
	}
	if err := inviteHTML.Execute(&html, in); err != nil {
		return nil, err
	}
	return multipartMessage(from, to, "You are invited to Warden ("+in.Tenant+")", "invite", now, text.Bytes(), html.Bytes())
}

// multipartMessage writes a multipart/alternative message.
func multipartMessage(from, to, subject, idPart string, now time.Time, text, html []byte) ([]byte, error) {
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	boundary := "warden-" + hex.EncodeToString(rnd[:])
	domain := "warden.local"
	if _, d, ok := strings.Cut(from, "@"); ok {
		domain = strings.Trim(d, "> ")
	}
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", from)
	h("To", to)
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Date", now.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+idPart+"."+hex.EncodeToString(rnd[:6])+"@"+domain+">")
	h("MIME-Version", "1.0")
	h("Auto-Submitted", "auto-generated")
	h("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	for _, part := range []struct {
		typ  string
		body []byte
	}{{"text/plain", text}, {"text/html", html}} {
		fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary, part.typ)
		qp := quotedprintable.NewWriter(&b)
		if _, err := qp.Write(part.body); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes(), nil
}

// errNoMailChannel is an invitation with no e-mail channel to send it.
var errNoMailChannel = errors.New("no e-mail NotificationChannel in the namespace or in default")

// DeliverInvite sends an invitation through the first e-mail
// NotificationChannel (by name) of its namespace, or of default, and
// records the attempt. It implements jobs.InviteSender.
func (s *Service) DeliverInvite(ctx context.Context, a jobs.InviteArgs, attempt int, final bool) error {
	rec := store.Delivery{Namespace: a.Namespace, Approval: InvitationRecord(a.Email), Type: resource.ChannelEmail, Recipient: a.Email, Attempt: attempt}
	var spec resource.NotificationChannelSpec
	var secrets map[string]string
	err := s.cfg.Store.View(ctx, a.Tenant, func(ctx context.Context, r store.Reader) error {
		for _, ns := range []string{a.Namespace, "default"} {
			chs, err := listChannels(ctx, r, ns)
			if err != nil {
				return err
			}
			sort.Slice(chs, func(i, j int) bool { return chs[i].Metadata.Name < chs[j].Metadata.Name })
			for _, ch := range chs {
				if t, _ := ch.Spec["type"].(string); t == resource.ChannelEmail {
					rec.Channel = ch.Metadata.Name
					spec, secrets, err = s.loadChannel(ctx, r, a.Tenant, ns, ch.Metadata.Name)
					return err
				}
			}
		}
		return errNoMailChannel
	})
	if err == nil {
		err = s.sendInvite(ctx, spec.Email, secrets["password"], a)
	}
	rec.Outcome = store.DeliveryDelivered
	if err != nil {
		rec.Outcome, rec.Error = store.DeliveryFailed, err.Error()
		if final || errors.Is(err, errNoMailChannel) {
			rec.Outcome = store.DeliveryGaveUp
		}
	}
	rec.Time = s.cfg.Now().UTC()
	if rerr := s.cfg.Store.Update(ctx, a.Tenant, func(ctx context.Context, tx store.Tx) error { return store.DeliveryInsert(ctx, tx, rec) }); rerr != nil {
		s.log.ErrorContext(ctx, "record an invitation attempt", "err", rerr)
	}
	if errors.Is(err, errNoMailChannel) {
		s.log.WarnContext(ctx, "invitation not e-mailed", "tenant", a.Tenant, "namespace", a.Namespace, "why", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("notifications: invitation of %s (attempt %d): %w", a.Email, attempt, err)
	}
	return nil
}

func (s *Service) sendInvite(ctx context.Context, ch *resource.EmailChannel, password string, a jobs.InviteArgs) error {
	if ch == nil {
		return errors.New("channel has no email settings")
	}
	from, err := mail.ParseAddress(ch.From)
	if err != nil {
		return fmt.Errorf("from address %q: %w", ch.From, err)
	}
	rcpt, err := mail.ParseAddress(a.Email)
	if err != nil {
		return fmt.Errorf("recipient %q: %w", a.Email, err)
	}
	in := Invitation{Tenant: a.Tenant, Namespace: a.Namespace, Role: a.Role, InvitedBy: strings.TrimPrefix(a.InvitedBy, "user:"),
		URL: s.cfg.PublicURL + "/signin?tenant=" + url.QueryEscape(a.Tenant)}
	msg, err := InvitationMessage(from.String(), rcpt.String(), in, s.cfg.Now())
	if err != nil {
		return err
	}
	return s.submit(ctx, ch, password, from.Address, rcpt.Address, msg)
}
