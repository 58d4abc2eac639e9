package notifications_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/notifications"
)

// plan is what the integrations decide for the call of one amount.
type plan struct {
	channel, decision string
}

// integrations plays the far side of the webhook and chat channels on
// the recorder: it verifies each delivery's signature and, for a call the
// test planned, calls Warden back signed, as the integration would. The
// outcome of each callback (or a refused delivery) goes to results.
type integrations struct {
	e       *env
	mu      sync.Mutex
	plans   map[int]plan
	results chan string
}

var amountIn = regexp.MustCompile(`"amount": ?([0-9]+)`)

func newIntegrations(e *env) *integrations {
	in := &integrations{e: e, plans: map[int]plan{}, results: make(chan string, 16)}
	e.ext.mu.Lock()
	e.ext.react["/hook"] = in.webhook
	e.ext.react["/slack-in"] = in.chat
	e.ext.mu.Unlock()
	return in
}

func (in *integrations) planFor(amount int) (plan, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	p, ok := in.plans[amount]
	return p, ok
}

// webhook is the Standard Webhooks consumer: it verifies the delivery and
// posts an approval.decision back, signed with the same secret.
func (in *integrations) webhook(r recorded) {
	if err := notifications.VerifyWebhook(webhookSecret, r.header, r.body, time.Now()); err != nil {
		in.results <- "webhook delivery refused: " + err.Error()
		return
	}
	var payload notifications.WebhookPayload
	var data notifications.Approval
	if json.Unmarshal(r.body, &payload) != nil || json.Unmarshal(payload.Data, &data) != nil {
		in.results <- "webhook delivery unreadable: " + string(r.body)
		return
	}
	amount, _ := data.Input["amount"].(float64)
	p, ok := in.planFor(int(amount))
	if !ok || p.channel != "webhook" {
		return
	}
	d, _ := json.Marshal(notifications.WebhookDecision{Approval: data.Name, Decision: p.decision,
		Rationale: "ledger checked by the webhook integration", DecidedBy: "alice@example.com"})
	body, _ := json.Marshal(notifications.WebhookPayload{Type: notifications.EventApprovalDecision, Timestamp: time.Now(), Data: d})
	now := time.Now()
	id := "msg_integration_" + strconv.FormatInt(now.UnixNano(), 36)
	sig, err := notifications.SignWebhook(webhookSecret, id, now, body)
	if err != nil {
		in.results <- "sign: " + err.Error()
		return
	}
	in.callback(in.e.cpURL+"/v1/notifications/default/default/hook/decisions", body, map[string]string{
		"Content-Type": "application/json", notifications.HeaderWebhookID: id,
		notifications.HeaderWebhookTimestamp: strconv.FormatInt(now.Unix(), 10), notifications.HeaderWebhookSignature: sig,
	}, data.Name)
}

// chat is the Slack-compatible server: it reads the interactive message
// and posts the click of carol (an approver, mapped by e-mail) on the
// planned button, signed with X-Slack-Signature v0.
func (in *integrations) chat(r recorded) {
	var msg struct {
		Blocks []struct {
			Text     struct{ Text string } `json:"text"`
			Elements []struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(r.body, &msg); err != nil {
		in.results <- "chat message unreadable: " + err.Error()
		return
	}
	var amount int
	var value string
	for _, b := range msg.Blocks {
		if m := amountIn.FindStringSubmatch(b.Text.Text); m != nil {
			amount, _ = strconv.Atoi(m[1])
		}
		for _, el := range b.Elements {
			if el.Value != "" {
				value = el.Value
			}
		}
	}
	p, ok := in.planFor(amount)
	if !ok || p.channel != "slack" {
		return
	}
	payload, _ := json.Marshal(map[string]any{"type": "block_actions",
		"user":    map[string]any{"id": "UCAROL", "username": "carol", "email": "carol@example.com"},
		"actions": []any{map[string]any{"action_id": p.decision, "value": value}}})
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	now := time.Now()
	_, approval, _ := strings.Cut(value, "/")
	in.callback(in.e.cpURL+"/v1/notifications/default/default/chat/slack", body, map[string]string{
		"Content-Type":                     "application/x-www-form-urlencoded",
		notifications.HeaderSlackTimestamp: strconv.FormatInt(now.Unix(), 10),
		notifications.HeaderSlackSignature: notifications.SignSlack(slackSecret, now, body),
	}, approval)
}

// callback posts a decision and reports "decided <approval>" or why not.
func (in *integrations) callback(to string, body []byte, header map[string]string, approval string) {
	req, _ := http.NewRequest(http.MethodPost, to, bytes.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		in.results <- "callback: " + err.Error()
		return
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		in.results <- fmt.Sprintf("callback answered %d: %s", res.StatusCode, b.String())
		return
	}
	in.results <- "decided " + approval
}

// TestBrowserDecideThroughIntegrations: on each store, agents' calls pause;
// the webhook receiver and the Slack-compatible server receive their
// deliveries, verify them and call Warden back signed; the tool runs once
// for an approval and never for a denial; the agent's long-poll returns;
// and in Chromium the inbox is empty and the audit log shows each decision
// with its channel and rationale.
func TestBrowserDecideThroughIntegrations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		flows   []plan
	}{
		{"sqlite", []plan{{"webhook", "approve"}, {"slack", "deny"}}},
		{"postgres", []plan{{"slack", "approve"}, {"webhook", "deny"}}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			e := start(t, backends()[tc.backend](t))
			e.member("alice@example.com")
			e.member("carol@example.com")
			in := newIntegrations(e)
			owner, _ := e.signInAs("olive@example.com", true)
			ctx, problems := browser(t)
			require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, network.SetCookie, network.SetCookieParams{Name: oidc.SessionCookie, Value: owner, URL: e.cpURL})
				return err
			})), "session cookie")
			css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

			for i, p := range tc.flows {
				amount := 40 + i
				in.mu.Lock()
				in.plans[amount] = p
				in.mu.Unlock()
				runsBefore := len(e.ext.got("/refund"))
				call := e.pause(amount)
				ap := "ap-" + strings.TrimPrefix(call, "tc-")
				polled := make(chan resp, 1)
				go func() { polled <- do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=60s", e.bot(), nil, nil) }()

				select {
				case got := <-in.results:
					require.Equal(t, "decided "+ap, got, "%s %s", p.channel, p.decision)
				case <-time.After(wait):
					t.Fatalf("the %s integration did not decide %s", p.channel, ap)
				}
				want, runs := "Succeeded", 1
				if p.decision == "deny" {
					want, runs = "Denied", 0
				}
				select {
				case r := <-polled:
					require.Equal(t, want, r.phase(), string(r.raw))
				case <-time.After(wait):
					t.Fatal("the agent's long-poll did not return")
				}
				require.Len(t, e.ext.got("/refund"), runsBefore+runs, "the tool ran %d times", runs)

				rationale := "ledger checked by the webhook integration"
				if p.channel == "slack" {
					rationale = "decided in chat by @carol"
				}
				record := p.decision + " via " + p.channel + ": " + rationale
				require.Equal(t, []string{record}, e.decisionRecords(ap))

				// The live stream replaces the inbox once connected: read it after that.
				require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.cpURL+"/"),
					chromedp.WaitVisible(chromedp.Search(`//div[@id="inbox-live" and @data-updated]`))), "inbox")
				inbox, err := chromedp.Run(ctx, chromedp.Text(css(`#inbox`)))
				require.NoError(t, err)
				require.Contains(t, inbox, "0 pending approvals")
				require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.cpURL+"/audit?verb=approvals/decide"), chromedp.WaitVisible(css(`#audit-results`))), "audit")
				log, err := chromedp.Run(ctx, chromedp.Text(css(`#audit-results`)))
				require.NoError(t, err)
				require.Contains(t, log, "Approval/"+ap)
				require.Contains(t, log, record)
			}
			checkAccessible(t, ctx, "the audit log")
			csp, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || []`))
			require.NoError(t, err)
			require.Empty(t, csp)
			require.Empty(t, problems())
			select {
			case extra := <-in.results:
				t.Fatalf("an unplanned delivery or callback: %s", extra)
			default:
			}
		})
	}
}
