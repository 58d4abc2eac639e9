package notifications

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Errors of e-mail links.
var (
	// ErrBadLink is a link that was not signed by this Warden or was
	// altered.
	ErrBadLink = errors.New("the link is not valid")
	// ErrLinkExpired is a link past its approval's expiry.
	ErrLinkExpired = errors.New("the link has expired")
)

// LinkClaims is what an e-mail link is bound to.
type LinkClaims struct {
	Tenant    string `json:"t"`
	Namespace string `json:"n"`
	Approval  string `json:"a"`
	// Recipient is the e-mail address the link was sent to; a decision
	// through the link is that person's.
	Recipient string `json:"r"`
	// Expires is the approval's expiry, Unix seconds.
	Expires int64 `json:"e"`
}

const linkDomain = "warden-approval-link\x00"

// LinkPath is the console path e-mail links open.
const LinkPath = "/approvals/link"

// SignLink returns the token of claims: base64url(JSON) "." base64url(
// HMAC-SHA256 over a domain string and the first part).
func SignLink(key []byte, c LinkClaims) string {
	b, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(linkMAC(key, body))
}

func linkMAC(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(linkDomain))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// ParseLink verifies token and returns its claims: ErrBadLink when it is
// malformed or its signature does not match, ErrLinkExpired after its
// expiry.
func ParseLink(key []byte, token string, now time.Time) (LinkClaims, error) {
	body, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 4096 {
		return LinkClaims{}, ErrBadLink
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, linkMAC(key, body)) {
		return LinkClaims{}, ErrBadLink
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return LinkClaims{}, ErrBadLink
	}
	var c LinkClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.Tenant == "" || c.Namespace == "" || c.Approval == "" || c.Recipient == "" {
		return LinkClaims{}, ErrBadLink
	}
	if !now.Before(time.Unix(c.Expires, 0)) {
		return c, fmt.Errorf("%w at %s", ErrLinkExpired, time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

// LinkURL is the signed link of recipient to approval a.
func (s *Service) LinkURL(a Approval, recipient string) string {
	t := SignLink(s.cfg.LinkKey, LinkClaims{Tenant: a.Tenant, Namespace: a.Namespace, Approval: a.Name,
		Recipient: strings.ToLower(recipient), Expires: a.ExpiresAt.Unix()})
	return s.cfg.PublicURL + LinkPath + "?t=" + url.QueryEscape(t)
}

// ParseLink verifies an e-mail link's token with the service's key.
func (s *Service) ParseLink(token string) (LinkClaims, error) {
	return ParseLink(s.cfg.LinkKey, token, s.cfg.Now())
}

// DeriveLinkKey derives the key of e-mail links from the master key, so
// links stay valid across restarts and replicas without a key of their
// own.
func DeriveLinkKey(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("warden approval e-mail links v1"))
	return m.Sum(nil)
}
