package notifications

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Slack request-signing headers.
const (
	HeaderSlackSignature = "X-Slack-Signature"
	HeaderSlackTimestamp = "X-Slack-Request-Timestamp"
)

// Action ids of the message's buttons.
const (
	SlackApprove = "approve"
	SlackDeny    = "deny"
)

// SlackMessage renders the interactive message of approval a: a summary,
// the input, and Approve / Deny buttons whose value names the approval.
func SlackMessage(a Approval) map[string]any {
	summary := fmt.Sprintf("*%s* asks to run `%s` (%s) in namespace *%s*.", a.Agent, a.Tool, a.SideEffect, a.Namespace)
	if a.Reason != "" {
		summary += "\n>" + a.Reason
	}
	if a.Policy != "" {
		summary += fmt.Sprintf("\nAsked by policy `%s`, rule `%s`.", a.Policy, a.Rule)
	}
	summary += "\nExpires " + a.ExpiresAt.UTC().Format("2006-01-02 15:04 MST") + "."
	value := a.Namespace + "/" + a.Name
	buttons := []any{
		map[string]any{"type": "button", "action_id": SlackApprove, "style": "primary", "value": value,
			"text": map[string]any{"type": "plain_text", "text": "Approve"}},
		map[string]any{"type": "button", "action_id": SlackDeny, "style": "danger", "value": value,
			"text": map[string]any{"type": "plain_text", "text": "Deny"}},
	}
	if a.URL != "" {
		buttons = append(buttons, map[string]any{"type": "button", "action_id": "open", "url": a.URL,
			"text": map[string]any{"type": "plain_text", "text": "Open in Warden"}})
	}
	input := a.InputJSON()
	if len(input) > 2800 {
		input = input[:2800] + "\n…"
	}
	return map[string]any{
		"text": fmt.Sprintf("Approval needed: %s by %s (%s)", a.Tool, a.Agent, a.Namespace),
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": summary}},
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "```" + input + "```"}},
			map[string]any{"type": "actions", "block_id": "warden-approval", "elements": buttons},
		},
	}
}

// sendSlack posts the interactive message to the incoming webhook.
func (s *Service) sendSlack(ctx context.Context, webhookURL string, a Approval) error {
	body, err := json.Marshal(SlackMessage(a))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhookURL, bytes.NewReader(body))
	if err != nil {
		return errors.New("the channel's webhook URL is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	return s.post(req)
}

// SignSlack returns the X-Slack-Signature of body: "v0=" hex(HMAC-SHA256(
// secret, "v0:" timestamp ":" body)).
func SignSlack(secret string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%d:", ts.Unix())
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySlack checks a Slack request signature and its timestamp's
// replay window.
func VerifySlack(secret string, header http.Header, body []byte, now time.Time) error {
	if secret == "" {
		return fmt.Errorf("%w: the channel has no signing secret", ErrBadSignature)
	}
	sec, err := strconv.ParseInt(header.Get(HeaderSlackTimestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is missing or not Unix seconds", ErrBadSignature, HeaderSlackTimestamp)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > ReplayWindow || d < -ReplayWindow {
		return ErrStale
	}
	if !hmac.Equal([]byte(header.Get(HeaderSlackSignature)), []byte(SignSlack(secret, ts, body))) {
		return ErrBadSignature
	}
	return nil
}

// SlackInteraction is the part of a block_actions callback Warden reads.
type SlackInteraction struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		// Email is sent by some Slack-compatible servers; Slack itself
		// needs users.info (the channel's bot token).
		Email string `json:"email"`
	} `json:"user"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// ParseSlackInteraction reads a form-encoded callback body (payload=JSON)
// and returns the clicked decision and the approval's namespace and name.
func ParseSlackInteraction(body []byte) (in SlackInteraction, decision, ns, approval string, err error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return in, "", "", "", fmt.Errorf("the body is not form-encoded: %w", err)
	}
	if err := json.Unmarshal([]byte(form.Get("payload")), &in); err != nil {
		return in, "", "", "", fmt.Errorf("payload is not JSON: %w", err)
	}
	if in.Type != "block_actions" || len(in.Actions) != 1 {
		return in, "", "", "", fmt.Errorf("expected one block action, got type %q with %d actions", in.Type, len(in.Actions))
	}
	act := in.Actions[0]
	switch act.ActionID {
	case SlackApprove:
		decision = "approve"
	case SlackDeny:
		decision = "deny"
	default:
		return in, "", "", "", fmt.Errorf("action %q decides nothing", act.ActionID)
	}
	ns, approval, ok := strings.Cut(act.Value, "/")
	if !ok || ns == "" || approval == "" {
		return in, "", "", "", fmt.Errorf("action value %q does not name an approval", act.Value)
	}
	return in, decision, ns, approval, nil
}

// slackEmail finds the clicking user's e-mail: from the callback, or with
// users.info and the channel's bot token.
func (s *Service) slackEmail(ctx context.Context, in SlackInteraction, apiURL, token string) (string, error) {
	if in.User.Email != "" {
		return strings.ToLower(in.User.Email), nil
	}
	if token == "" || in.User.ID == "" {
		return "", errors.New("the callback carries no e-mail and the channel has no bot token to look it up")
	}
	if apiURL == "" {
		apiURL = "https://slack.com/api"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(apiURL, "/")+"/users.info?user="+url.QueryEscape(in.User.ID), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("users.info: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		User  struct {
			Profile struct {
				Email string `json:"email"`
			} `json:"profile"`
		} `json:"user"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&out); err != nil {
		return "", fmt.Errorf("users.info: %w", err)
	}
	if !out.OK || out.User.Profile.Email == "" {
		return "", fmt.Errorf("users.info: no e-mail for user %s (%s)", in.User.ID, out.Error)
	}
	return strings.ToLower(out.User.Profile.Email), nil
}
