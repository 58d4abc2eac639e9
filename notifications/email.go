package notifications

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"html/template"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	textTemplate "text/template"
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// TLS modes of an SMTP connection.
const (
	SMTPStartTLS = "starttls"
	SMTPImplicit = "implicit"
	SMTPNone     = "none"
)

var textBody = textTemplate.Must(textTemplate.New("text").Parse(`Agent {{.Agent}} asks to run {{.Tool}} ({{.SideEffect}}) in namespace {{.Namespace}}.
{{if .Reason}}
Reason: {{.Reason}}
{{end}}{{if .Policy}}
Asked by policy {{.Policy}}, rule {{.Rule}}.
{{end}}
Input:
{{.InputJSON}}

Decide before {{.ExpiresAt.UTC.Format "2006-01-02 15:04 MST"}}:
{{.URL}}

The link is yours alone; opening it decides nothing.
`))

var htmlBody = template.Must(template.New("html").Parse(`<!doctype html>
<html><body style="font-family:system-ui,sans-serif;color:#1a1a1a">
<p>Agent <strong>{{.Agent}}</strong> asks to run <strong>{{.Tool}}</strong> in namespace <strong>{{.Namespace}}</strong>.</p>
<table style="border-collapse:collapse">
<tr><th align="left" style="padding:2px 12px 2px 0">Side effect</th><td>{{.SideEffect}}</td></tr>
{{if .Reason}}<tr><th align="left" style="padding:2px 12px 2px 0">Reason</th><td>{{.Reason}}</td></tr>{{end}}
{{if .Policy}}<tr><th align="left" style="padding:2px 12px 2px 0">Policy</th><td>{{.Policy}}, rule {{.Rule}}</td></tr>{{end}}
<tr><th align="left" style="padding:2px 12px 2px 0">Expires</th><td>{{.ExpiresAt.UTC.Format "2006-01-02 15:04 MST"}}</td></tr>
</table>
<p>Input:</p>
<pre style="background:#f4f4f4;padding:8px">{{.InputJSON}}</pre>
<p><a href="{{.URL}}">Review and decide</a></p>
<p style="color:#555">The link is yours alone; opening it decides nothing.</p>
</body></html>
`))

// Message renders the e-mail of approval a to recipient from sender: a
// multipart/alternative message with a plain-text and an HTML part.
func Message(from, to string, a Approval, now time.Time) ([]byte, error) {
	var text, html bytes.Buffer
	if err := textBody.Execute(&text, a); err != nil {
		return nil, fmt.Errorf("render text: %w", err)
	}
	if err := htmlBody.Execute(&html, a); err != nil {
		return nil, fmt.Errorf("render html: %w", err)
	}
	return multipartMessage(from, to, fmt.Sprintf("Approval needed: %s by %s (%s)", a.Tool, a.Agent, a.Namespace), a.Name, now,
		text.Bytes(), html.Bytes())
}

// sendEmail submits the message over SMTP: STARTTLS (required unless the
// channel says none), AUTH PLAIN when a username is set.
func (s *Service) sendEmail(ctx context.Context, ch *resource.EmailChannel, password, to string, a Approval) error {
	if ch == nil {
		return fmt.Errorf("channel has no email settings")
	}
	from, err := mail.ParseAddress(ch.From)
	if err != nil {
		return fmt.Errorf("from address %q: %w", ch.From, err)
	}
	rcpt, err := mail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("recipient %q: %w", to, err)
	}
	msg, err := Message(from.String(), rcpt.String(), a, s.cfg.Now())
	if err != nil {
		return err
	}
	return s.submit(ctx, ch, password, from.Address, rcpt.Address, msg)
}

// submit delivers msg over SMTP: STARTTLS (required unless the channel
// says none), AUTH PLAIN when a username is set.
func (s *Service) submit(ctx context.Context, ch *resource.EmailChannel, password, from, to string, msg []byte) error {
	mode := ch.SMTP.TLS
	if mode == "" {
		mode = SMTPStartTLS
	}
	port := int(ch.SMTP.Port)
	if port == 0 {
		port = 587
		if mode == SMTPImplicit {
			port = 465
		}
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.cfg.TLS != nil {
		tlsCfg = s.cfg.TLS.Clone()
	}
	tlsCfg.ServerName = ch.SMTP.Host
	addr := net.JoinHostPort(ch.SMTP.Host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var (
		conn net.Conn
		err  error
	)
	d := &net.Dialer{}
	if mode == SMTPImplicit {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, ch.SMTP.Host)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("smtp greeting from %s: %w", addr, err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Hello("warden"); err != nil {
		return fmt.Errorf("smtp EHLO: %w", err)
	}
	if mode == SMTPStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("smtp server %s does not offer STARTTLS", addr)
		}
		if err := c.StartTLS(tlsCfg); err != nil {
			return fmt.Errorf("smtp STARTTLS: %w", err)
		}
	}
	if ch.SMTP.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", ch.SMTP.Username, password, ch.SMTP.Host)); err != nil {
			return fmt.Errorf("smtp AUTH: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("smtp RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp message refused: %w", err)
	}
	return c.Quit()
}
