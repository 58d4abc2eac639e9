package oidc

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/zitadel/oidc/v3/pkg/client/rp"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/store"
)

// ssoIssuerPrefix names a tenant's own SSO connection in the flow cookie:
// "sso:<tenant>".
const ssoIssuerPrefix = "sso:"

// Handler serves people sign-in (/auth/login, /auth/callback,
// /auth/logout), session authentication, CSRF protection, and verifies OIDC
// ID tokens presented as API bearer tokens. Build it with New.
type Handler struct {
	cfg     Config
	st      store.Store
	now     func() time.Time
	log     *slog.Logger
	key     []byte
	limiter *Limiter

	// RenderChoice answers a callback whose person belongs to several
	// tenants and asked for none. The default writes the TenantChoice as
	// JSON; the console replaces it with a page.
	RenderChoice func(c *fiber.Ctx, choice TenantChoice) error

	mu      sync.Mutex
	parties map[string]rp.RelyingParty // issuer URL + "\x00" + client id

	// locals are local mode's one-time sign-in links (locallink.go).
	locals localLinks

	// signup creates the tenant of a verified sign-up (WithSignup); nil
	// refuses sign-ups.
	signup SignupFunc
}

// New returns a Handler. now defaults to time.Now, logger to slog.Default().
func New(cfg Config, st store.Store, now func() time.Time, logger *slog.Logger) (*Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	key := cfg.CookieKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generate cookie key: %w", err)
		}
	}
	h := &Handler{cfg: cfg, st: st, now: now, log: logger, key: key,
		limiter: NewLimiter(cfg.RateLimit, now), parties: map[string]rp.RelyingParty{}}
	h.RenderChoice = func(c *fiber.Ctx, choice TenantChoice) error { return c.JSON(choice) }
	return h, nil
}

// provider is one place to sign in: a deployment issuer or a tenant's SSO.
type provider struct {
	name         string // IssuerConfig.Name or "sso:<tenant>"
	issuerURL    string
	clientID     string
	clientSecret string
	scopes       []string
	tenant       string // set for a tenant SSO connection
}

func (h *Handler) issuerByName(name string) (provider, bool) {
	for _, is := range h.cfg.Issuers {
		if is.Name == name {
			return provider{name: is.Name, issuerURL: is.IssuerURL, clientID: is.ClientID, clientSecret: is.ClientSecret, scopes: is.Scopes}, true
		}
	}
	return provider{}, false
}

func (h *Handler) issuerNames() string {
	names := make([]string, 0, len(h.cfg.Issuers))
	for _, is := range h.cfg.Issuers {
		names = append(names, is.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// relyingParty returns the cached relying party of p, running discovery on
// first use (and again after a failed attempt).
func (h *Handler) relyingParty(ctx context.Context, p provider) (rp.RelyingParty, error) {
	k := p.issuerURL + "\x00" + p.clientID
	h.mu.Lock()
	party, ok := h.parties[k]
	h.mu.Unlock()
	if ok {
		return party, nil
	}
	party, err := rp.NewRelyingPartyOIDC(ctx, p.issuerURL, p.clientID, p.clientSecret, h.cfg.RedirectURL, p.scopes,
		rp.WithHTTPClient(h.cfg.HTTPClient),
		rp.WithVerifierOpts(rp.WithIssuedAtOffset(h.cfg.ClockSkew), rp.WithNonce(nonceFrom)))
	if err != nil {
		h.log.WarnContext(ctx, "oidc discovery failed", "issuer", p.issuerURL, "err", err)
		return nil, apierr.New(apierr.CodeUnavailable, "the identity provider %s cannot be reached; try again shortly", p.issuerURL)
	}
	h.mu.Lock()
	h.parties[k] = party
	h.mu.Unlock()
	return party, nil
}

type nonceKey struct{}

func nonceFrom(ctx context.Context) string {
	n, _ := ctx.Value(nonceKey{}).(string)
	return n
}

// limit takes a token for key or answers 429 RateLimited.
func (h *Handler) limit(c *fiber.Ctx, key string) error {
	ok, retry := h.limiter.Allow(key)
	if ok {
		return nil
	}
	secs := int(retry/time.Second) + 1
	c.Set(fiber.HeaderRetryAfter, fmt.Sprint(secs))
	h.log.InfoContext(c.UserContext(), "sign-in rate limited", "key", strings.SplitN(key, ":", 2)[0])
	return apierr.New(apierr.CodeRateLimited, "too many sign-in attempts; try again in %d seconds", secs).
		WithDetails(map[string]any{"retryAfterSeconds": secs})
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func unauthenticated(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeUnauthenticated, format, args...)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
