package resource

import (
	"fmt"
	"net/mail"
)

// Types of NotificationChannel.
const (
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
)

// validateNotificationChannel checks what the schema cannot: the block of
// the channel's type is there and no other, and addresses parse.
func validateNotificationChannel(s map[string]any, add addFunc) {
	typ := str(s, "type")
	for _, t := range []string{ChannelEmail, ChannelWebhook, ChannelSlack} {
		_, has := s[t].(map[string]any)
		switch {
		case t == typ && !has:
			add("spec."+t, ErrCodeRequired, "a NotificationChannel of type %s needs spec.%s", t, t)
		case t != typ && has:
			add("spec."+t, ErrCodeInvalid, "spec.%s is used only with type %s", t, t)
		}
	}
	if typ == ChannelWebhook {
		if w, ok := s["webhook"].(map[string]any); ok {
			checkURL(w, "url", "spec.webhook.url", add)
		}
	}
	e, ok := s["email"].(map[string]any)
	if !ok || typ != ChannelEmail {
		return
	}
	if from := str(e, "from"); from != "" {
		if _, err := mail.ParseAddress(from); err != nil {
			add("spec.email.from", ErrCodeInvalid, "%q is not an e-mail address", from)
		}
	}
	to, _ := e["to"].([]any)
	for i, v := range to {
		a, _ := v.(string)
		if _, err := mail.ParseAddress(a); err != nil {
			add(fmt.Sprintf("spec.email.to[%d]", i), ErrCodeInvalid, "%q is not an e-mail address", a)
		}
	}
}

// NotificationChannelSpec is the spec of a NotificationChannel: where the
// approvals of its namespace are announced.
type NotificationChannelSpec struct {
	// Type is email, webhook or slack.
	Type string `json:"type"`
	// Selector picks the approvals the channel announces.
	Selector *ChannelSelector `json:"selector,omitempty"`
	// MaxAttempts bounds delivery attempts; default 8.
	MaxAttempts int64 `json:"maxAttempts,omitempty"`
	// Email configures type email.
	Email *EmailChannel `json:"email,omitempty"`
	// Webhook configures type webhook.
	Webhook *WebhookChannel `json:"webhook,omitempty"`
	// Slack configures type slack.
	Slack *SlackChannel `json:"slack,omitempty"`
}

// ChannelSelector picks approvals by the calling agent's environment and
// the tool's side-effect class; an empty list matches every value.
type ChannelSelector struct {
	Environments []string `json:"environments,omitempty"`
	SideEffects  []string `json:"sideEffects,omitempty"`
}

// EmailChannel sends e-mail over SMTP.
type EmailChannel struct {
	// To are the recipients; each gets a message and a link of their own.
	To []string `json:"to"`
	// From is the sender address.
	From string       `json:"from"`
	SMTP SMTPSettings `json:"smtp"`
}

// SMTPSettings is the submission server of an EmailChannel.
type SMTPSettings struct {
	Host string `json:"host"`
	// Port defaults to 587 (465 with tls implicit).
	Port int64 `json:"port,omitempty"`
	// TLS is starttls (default, required), implicit or none.
	TLS string `json:"tls,omitempty"`
	// Username and PasswordSecretRef enable SMTP AUTH.
	Username          string     `json:"username,omitempty"`
	PasswordSecretRef *SecretRef `json:"passwordSecretRef,omitempty"`
}

// WebhookChannel posts Standard Webhooks to URL.
type WebhookChannel struct {
	URL              string    `json:"url"`
	SigningSecretRef SecretRef `json:"signingSecretRef"`
}

// SlackChannel posts interactive messages to a Slack-compatible incoming
// webhook.
type SlackChannel struct {
	WebhookURLSecretRef SecretRef `json:"webhookURLSecretRef"`
	SigningSecretRef    SecretRef `json:"signingSecretRef"`
	// BotTokenSecretRef, when set, looks the clicking user's e-mail up
	// with users.info at APIURL (default https://slack.com/api).
	BotTokenSecretRef *SecretRef `json:"botTokenSecretRef,omitempty"`
	APIURL            string     `json:"apiURL,omitempty"`
}

// SecretRef names one key of a Secret in the same namespace.
type SecretRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Matches reports whether the channel announces an approval of a call
// made in environment env by a tool of side-effect class sideEffect.
func (s *NotificationChannelSpec) Matches(env, sideEffect string) bool {
	if s.Selector == nil {
		return true
	}
	in := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	return in(s.Selector.Environments, env) && in(s.Selector.SideEffects, sideEffect)
}
