package notifications

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/warden-dev/warden/jobs"
)

// Standard Webhooks headers.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// ReplayWindow is how far a signed inbound request's timestamp may be from
// now, either way (Standard Webhooks and Slack both use five minutes).
const ReplayWindow = 5 * time.Minute

// Event types of the webhook payload.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecision  = "approval.decision"
)

// Errors of signed inbound requests.
var (
	ErrBadSignature = errors.New("the signature does not match")
	ErrStale        = errors.New("the timestamp is outside the replay window")
)

// WebhookPayload is the body of every webhook Warden sends and of the
// decisions it takes back: {type, timestamp, data}.
type WebhookPayload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// WebhookDecision is the data of an approval.decision callback.
type WebhookDecision struct {
	Approval  string `json:"approval"`
	Decision  string `json:"decision"`
	Rationale string `json:"rationale"`
	// DecidedBy is the e-mail of the Warden member who decided; the
	// decision is authorized as theirs.
	DecidedBy string `json:"decidedBy"`
}

// webhookKey decodes a Standard Webhooks secret: "whsec_" and base64; a
// secret without the prefix is used as raw bytes.
func webhookKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		k, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("webhook secret: the part after whsec_ is not base64")
		}
		return k, nil
	}
	if secret == "" {
		return nil, errors.New("webhook secret is empty")
	}
	return []byte(secret), nil
}

// SignWebhook returns the webhook-signature value of body: "v1,"
// base64(HMAC-SHA256(key, id "." timestamp "." body)).
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts.Unix())
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// VerifyWebhook checks a Standard Webhooks request: the timestamp within
// ReplayWindow of now and one of the space-separated v1 signatures equal
// to the body's.
func VerifyWebhook(secret string, header http.Header, body []byte, now time.Time) error {
	id, tsRaw, sigs := header.Get(HeaderWebhookID), header.Get(HeaderWebhookTimestamp), header.Get(HeaderWebhookSignature)
	if id == "" || tsRaw == "" || sigs == "" {
		return fmt.Errorf("%w: %s, %s and %s are required", ErrBadSignature, HeaderWebhookID, HeaderWebhookTimestamp, HeaderWebhookSignature)
	}
	sec, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not Unix seconds", ErrBadSignature, HeaderWebhookTimestamp)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > ReplayWindow || d < -ReplayWindow {
		return ErrStale
	}
	want, err := SignWebhook(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}

// sendWebhook posts the approval.requested payload, signed. A 2xx answer
// is delivered; anything else is a failed attempt.
func (s *Service) sendWebhook(ctx context.Context, url, secret string, a Approval, args jobs.NotifyArgs) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	now := s.cfg.Now().UTC()
	body, err := json.Marshal(WebhookPayload{Type: EventApprovalRequested, Timestamp: now, Data: data})
	if err != nil {
		return err
	}
	// The id is the same on every attempt of one notification, so a
	// receiver can drop a retry it already handled.
	sum := sha256.Sum256([]byte(args.Tenant + "\x00" + args.Namespace + "\x00" + args.Approval + "\x00" + args.Channel))
	id := "msg_" + hex.EncodeToString(sum[:12])
	sig, err := SignWebhook(secret, id, now, body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	return s.post(req)
}

// post sends req and turns a non-2xx answer into an error that names the
// status, never the URL (a chat webhook URL is a credential).
func (s *Service) post(req *http.Request) error {
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return fmt.Errorf("post to %s: %w", req.URL.Host, ue.Unwrap())
		}
		return fmt.Errorf("post to %s failed", req.URL.Host)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", req.URL.Host, resp.Status)
	}
	return nil
}
