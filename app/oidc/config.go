package oidc

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures people sign-in for a deployment.
type Config struct {
	// Issuers are the OpenID Providers people may sign in with.
	Issuers []IssuerConfig
	// RedirectURL is the absolute URL of GET /auth/callback as registered
	// with every issuer, e.g. https://warden.example.com/auth/callback.
	RedirectURL string
	// CookieSecure sets the Secure attribute on every cookie; turn it on
	// whenever the console is served over TLS (also behind a TLS-terminating
	// proxy). Requests that arrive over TLS get it anyway.
	CookieSecure bool
	// CookieKey signs the short-lived sign-in flow cookie (HMAC-SHA256). At
	// least 32 bytes; every replica must share it. When empty a random key
	// is generated, which works for a single process only.
	CookieKey []byte
	// SessionTTL is how long a console session lasts; default 12h.
	SessionTTL time.Duration
	// FlowTTL is how long a started sign-in may take; default 10m.
	FlowTTL time.Duration
	// ClockSkew is the tolerance on ID token expiry and issued-at; default 1m.
	ClockSkew time.Duration
	// RateLimit limits sign-in attempts per client IP and per e-mail.
	RateLimit RateLimit
	// HTTPClient talks to the issuers (discovery, keys, token endpoint);
	// default http.Client with a 10s timeout.
	HTTPClient *http.Client
	// AfterLogin is where a successful sign-in redirects; default "/".
	AfterLogin string
}

// IssuerConfig is one OpenID Provider of the deployment.
type IssuerConfig struct {
	// Name selects the issuer in /auth/login?issuer=NAME.
	Name string
	// IssuerURL is the issuer identifier (the `iss` of its tokens).
	IssuerURL string
	// ClientID is Warden's client id there; ID tokens must name it as
	// audience.
	ClientID string
	// ClientSecret is empty for a public client (PKCE only).
	ClientSecret string
	// Scopes default to openid, email, profile.
	Scopes []string
}

// RateLimit is a token bucket: Attempts per Window, refilled continuously.
type RateLimit struct {
	Attempts int
	Window   time.Duration
}

// WithDefaults returns c with every unset field defaulted.
func (c Config) WithDefaults() Config {
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.FlowTTL == 0 {
		c.FlowTTL = 10 * time.Minute
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = time.Minute
	}
	if c.RateLimit.Attempts == 0 {
		c.RateLimit.Attempts = 10
	}
	if c.RateLimit.Window == 0 {
		c.RateLimit.Window = 5 * time.Minute
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.AfterLogin == "" {
		c.AfterLogin = "/"
	}
	iss := make([]IssuerConfig, len(c.Issuers))
	for i, is := range c.Issuers {
		is.IssuerURL = strings.TrimSuffix(is.IssuerURL, "/")
		if len(is.Scopes) == 0 {
			is.Scopes = []string{"openid", "email", "profile"}
		}
		iss[i] = is
	}
	c.Issuers = iss
	return c
}

// Validate reports every problem of a defaulted config, naming the field.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.RedirectURL)
	if c.RedirectURL == "" || err != nil || !u.IsAbs() {
		errs = append(errs, fmt.Errorf("oidc.redirectURL: %q must be the absolute URL of /auth/callback", c.RedirectURL))
	}
	if len(c.CookieKey) > 0 && len(c.CookieKey) < 32 {
		errs = append(errs, errors.New("oidc.cookieKey: must be at least 32 bytes"))
	}
	seen := map[string]bool{}
	for i, is := range c.Issuers {
		f := fmt.Sprintf("oidc.issuers[%d]", i)
		if is.Name == "" || strings.HasPrefix(is.Name, ssoIssuerPrefix) {
			errs = append(errs, fmt.Errorf("%s.name: required, and must not start with %q", f, ssoIssuerPrefix))
		}
		if seen[is.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used twice", f, is.Name))
		}
		seen[is.Name] = true
		if u, err := url.Parse(is.IssuerURL); is.IssuerURL == "" || err != nil || !u.IsAbs() {
			errs = append(errs, fmt.Errorf("%s.issuerURL: %q must be an absolute URL", f, is.IssuerURL))
		}
		if is.ClientID == "" {
			errs = append(errs, fmt.Errorf("%s.clientID: required", f))
		}
	}
	if c.RateLimit.Attempts < 1 || c.RateLimit.Window <= 0 {
		errs = append(errs, errors.New("oidc.rateLimit: attempts and window must be positive"))
	}
	return errors.Join(errs...)
}
