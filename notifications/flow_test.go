package notifications_test

import (
	"context"
	"encoding/json"
	"fmt"
	stdhtml "html"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/notifications"
	"github.com/warden-dev/warden/notifications/smtptest"
)

// TestApprovalFlow: a paused call is announced on every matching channel
// (e-mail to each recipient over STARTTLS and AUTH, a signed webhook, a
// chat message), every attempt is recorded, and decisions come back
// through the signed webhook and the chat callback, refused when they
// should be and first-wins otherwise.
func TestApprovalFlow(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, newURL(t))
			e.member("alice@example.com")
			e.member("dave@example.com") // a member without the approver role
			call := e.pause(120)
			ap := "ap-" + strings.TrimPrefix(call, "tc-")
			require.True(t, strings.HasPrefix(call, "tc-"), call)

			msgs := e.smtp.Wait(t, 2, wait)
			byRcpt := map[string]smtptest.Message{}
			for _, m := range msgs {
				require.True(t, m.TLS, "submitted without TLS")
				require.Equal(t, "warden", m.User, "submitted without AUTH")
				require.Len(t, m.To, 1)
				byRcpt[m.To[0]] = m
			}
			require.Contains(t, byRcpt, "alice@example.com")
			require.Contains(t, byRcpt, "bob@example.com")
			text, html := parts(t, byRcpt["alice@example.com"].Data)
			for _, want := range []string{"bot", "payments.refund", "financial", `"amount": 120`, `"customer": "c-42"`, "money@2", "refunds-need-a-person"} {
				require.Contains(t, text, want)
				require.Contains(t, stdhtml.UnescapeString(html), want)
			}
			link := regexp.MustCompile(`http://console\.test/approvals/link\?t=\S+`).FindString(text)
			require.NotEmpty(t, link, text)
			u, err := url.Parse(link)
			require.NoError(t, err)
			claims, err := notifications.ParseLink(e.linkKy, u.Query().Get("t"), time.Now())
			require.NoError(t, err)
			require.Equal(t, notifications.LinkClaims{Tenant: server.LocalTenant, Namespace: "default", Approval: ap,
				Recipient: "alice@example.com", Expires: claims.Expires}, claims)
			require.Contains(t, html, `href="`+strings.ReplaceAll(link, "&", "&amp;")+`"`)

			// The webhook, signed per Standard Webhooks.
			require.Eventually(t, func() bool { return len(e.ext.got("/hook")) == 1 }, wait, 10*time.Millisecond)
			hook := e.ext.got("/hook")[0]
			require.NoError(t, notifications.VerifyWebhook(webhookSecret, hook.header, hook.body, time.Now()))
			var payload notifications.WebhookPayload
			require.NoError(t, json.Unmarshal(hook.body, &payload))
			require.Equal(t, notifications.EventApprovalRequested, payload.Type)
			var data notifications.Approval
			require.NoError(t, json.Unmarshal(payload.Data, &data))
			require.Equal(t, ap, data.Name)
			require.Equal(t, "financial", data.SideEffect)
			require.Equal(t, "http://console.test/approvals/default/"+ap, data.URL)
			require.EqualValues(t, 120, data.Input["amount"])

			// The chat message with its buttons.
			require.Eventually(t, func() bool { return len(e.ext.got("/slack-in")) == 1 }, wait, 10*time.Millisecond)
			chat := string(e.ext.got("/slack-in")[0].body)
			require.Contains(t, chat, `"action_id":"approve"`)
			require.Contains(t, chat, `"value":"default/`+ap+`"`)

			// Every attempt is on record; the prod-only channel sent nothing.
			recs := e.waitDeliveries(ap, 4)
			seen := map[string]string{}
			for _, d := range recs {
				require.Equal(t, store.DeliveryDelivered, d.Outcome, "%+v", d)
				seen[d.Channel+"/"+d.Recipient] = d.Type
			}
			host := strings.TrimPrefix(e.ext.URL, "http://")
			require.Equal(t, map[string]string{"mail/alice@example.com": "email", "mail/bob@example.com": "email",
				"hook/" + host: "webhook", "chat/" + host: "slack"}, seen)
			require.Empty(t, e.ext.got("/prod-hook"))

			// Refused, audited, nothing decided: a bad signature, a stale
			// timestamp, a chat user who is not a member, a member who
			// is not an approver.
			decision := func(by, d string) []byte {
				data, _ := json.Marshal(notifications.WebhookDecision{Approval: ap, Decision: d, Rationale: "checked the ledger", DecidedBy: by})
				b, _ := json.Marshal(notifications.WebhookPayload{Type: notifications.EventApprovalDecision, Timestamp: time.Now(), Data: data})
				return b
			}
			hookURL := e.cpURL + "/v1/notifications/default/default/hook/decisions"
			body := decision("alice@example.com", "approve")
			bad := signedHeaders(t, webhookSecret, body, time.Now())
			bad[notifications.HeaderWebhookSignature] = "v1,AAAA"
			require.Equal(t, http.StatusUnauthorized, do(t, http.MethodPost, hookURL, "", body, bad).status)
			stale := signedHeaders(t, webhookSecret, body, time.Now().Add(-6*time.Minute))
			require.Equal(t, http.StatusUnauthorized, do(t, http.MethodPost, hookURL, "", body, stale).status)
			r := slackClick(t, e, "eve@example.com", "approve", ap)
			require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
			notApprover := decision("dave@example.com", "approve")
			r = do(t, http.MethodPost, hookURL, "", notApprover, signedHeaders(t, webhookSecret, notApprover, time.Now()))
			require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
			require.Equal(t, "pending", e.approvalStatus(ap))
			require.Zero(t, len(e.ext.got("/refund")))

			// alice approves through the webhook: the tool runs once.
			r = do(t, http.MethodPost, hookURL, "", body, signedHeaders(t, webhookSecret, body, time.Now()))
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "approved", r.str("status", "status"))
			require.Equal(t, "webhook", r.str("status", "channel"))
			require.Equal(t, "alice@example.com", r.str("status", "decidedBy"))
			final := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=15s", e.bot(), nil, nil)
			require.Equal(t, "Succeeded", final.str("status", "phase"), string(final.raw))
			require.Len(t, e.ext.got("/refund"), 1)

			// A later decision through chat: 409 naming who and when.
			e.member("carol@example.com")
			r = slackClick(t, e, "carol@example.com", "deny", ap)
			require.Equal(t, http.StatusConflict, r.status, string(r.raw))
			require.Contains(t, r.str("error", "message"), "alice@example.com")
			require.Len(t, e.ext.got("/refund"), 1)

			// The audit log names the channel and the rationale, and the
			// refusals.
			audit := do(t, http.MethodGet, e.cpURL+"/v1/audit?verb=approvals/decide", e.admin, nil, nil)
			require.Equal(t, http.StatusOK, audit.status, string(audit.raw))
			log := string(audit.raw)
			require.Contains(t, log, "approve via webhook: checked the ledger")
			require.Contains(t, log, "webhook refused")
			require.Contains(t, log, "eve@example.com is not a member")
			require.Contains(t, log, "dave@example.com")
		})
	}
}

// TestAnnouncedInTheApprovalsTransaction: a transaction that rolls back
// leaves no notification behind; one that commits is delivered, after
// failed attempts, and each attempt is recorded.
func TestAnnouncedInTheApprovalsTransaction(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, newURL(t))
			ctx := context.Background()
			mk := approvalObject
			err := e.st.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
				created, err := tx.ResourceCreate(ctx, mk("ap-rolled-back"))
				if err != nil {
					return err
				}
				if err := e.svc.AnnounceTx(ctx, tx, server.LocalTenant, created, "dev"); err != nil {
					return err
				}
				return fmt.Errorf("the call's record failed")
			})
			require.Error(t, err)

			e.smtp.FailNext(1)
			require.NoError(t, e.st.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
				created, err := tx.ResourceCreate(ctx, mk("ap-committed"))
				if err != nil {
					return err
				}
				return e.svc.AnnounceTx(ctx, tx, server.LocalTenant, created, "dev")
			}))
			msgs := e.smtp.Wait(t, 2, wait)
			recs := e.waitDeliveries("ap-committed", 5)
			for _, m := range msgs {
				require.Contains(t, string(m.Data), "ap-committed")
			}
			var failed, delivered int
			for _, d := range recs {
				switch d.Outcome {
				case store.DeliveryFailed:
					failed++
					require.Equal(t, 1, d.Attempt)
					require.Contains(t, d.Error, "451")
				case store.DeliveryDelivered:
					delivered++
				}
			}
			require.Equal(t, 1, failed, "%+v", recs)
			require.Equal(t, 4, delivered, "%+v", recs)
			require.Empty(t, e.deliveries("ap-rolled-back"))
			require.Len(t, e.smtp.Messages(), 2)
		})
	}
}

// TestWebhookGivesUp: a receiver that keeps failing gets maxAttempts
// attempts, the last recorded as gave_up.
func TestWebhookGivesUp(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite://"+t.TempDir()+"/warden.db")
	e.ext.mu.Lock()
	e.ext.status["/hook"] = http.StatusServiceUnavailable
	e.ext.mu.Unlock()
	call := e.pause(7)
	ap := "ap-" + strings.TrimPrefix(call, "tc-")
	var hooks []store.Delivery
	require.Eventually(t, func() bool {
		hooks = hooks[:0]
		for _, d := range e.deliveries(ap) {
			if d.Channel == "hook" {
				hooks = append(hooks, d)
			}
		}
		return len(hooks) == 3
	}, 30*time.Second, 50*time.Millisecond)
	for i, d := range hooks {
		require.Equal(t, i+1, d.Attempt)
		require.Contains(t, d.Error, "503")
		want := store.DeliveryFailed
		if i == 2 {
			want = store.DeliveryGaveUp
		}
		require.Equal(t, want, d.Outcome)
	}
	require.Len(t, e.ext.got("/hook"), 3)
}

// parts returns the text and HTML parts of a message.
func parts(t *testing.T, raw []byte) (text, html string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(string(raw)))
	require.NoError(t, err)
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mt)
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		b := new(strings.Builder)
		buf := make([]byte, 4096)
		for {
			n, err := p.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		switch {
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain"):
			text = b.String()
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"):
			html = b.String()
		}
	}
	require.NotEmpty(t, text)
	require.NotEmpty(t, html)
	return text, html
}

func signedHeaders(t *testing.T, secret string, body []byte, at time.Time) map[string]string {
	t.Helper()
	id := "msg_test_" + strconv.FormatInt(at.UnixNano(), 36)
	sig, err := notifications.SignWebhook(secret, id, at, body)
	require.NoError(t, err)
	return map[string]string{notifications.HeaderWebhookID: id, notifications.HeaderWebhookTimestamp: strconv.FormatInt(at.Unix(), 10),
		notifications.HeaderWebhookSignature: sig}
}

// slackClick posts a signed block_actions callback of a user with email.
func slackClick(t *testing.T, e *env, email, action, ap string) resp {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"type": "block_actions",
		"user":    map[string]any{"id": "U" + strings.ToUpper(strings.Split(email, "@")[0]), "username": strings.Split(email, "@")[0], "email": email},
		"actions": []any{map[string]any{"action_id": action, "value": "default/" + ap}}})
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	now := time.Now()
	return do(t, http.MethodPost, e.cpURL+"/v1/notifications/default/default/chat/slack", "", body, map[string]string{
		"Content-Type":                     "application/x-www-form-urlencoded",
		notifications.HeaderSlackTimestamp: strconv.FormatInt(now.Unix(), 10),
		notifications.HeaderSlackSignature: notifications.SignSlack(slackSecret, now, body),
	})
}

func (e *env) approvalStatus(ap string) string {
	e.t.Helper()
	r := do(e.t, http.MethodGet, e.cpURL+"/v1/namespaces/default/approvals/"+ap, e.admin, nil, nil)
	require.Equal(e.t, http.StatusOK, r.status, string(r.raw))
	return r.str("status", "status")
}
