package workload

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// WorkloadRef is the Warden workload a Kubernetes service account stands
// for.
type WorkloadRef struct {
	// Namespace is the Warden namespace.
	Namespace string `json:"namespace"`
	// Agent is the Warden Agent's name.
	Agent string `json:"agent"`
	// Environment, when set, is the only environment the account may ask
	// for; else the request's environment is used.
	Environment string `json:"environment,omitempty"`
}

// KubernetesIssuer trusts service-account tokens of one cluster.
type KubernetesIssuer struct {
	// Issuer is the cluster's service-account issuer URL (the iss claim);
	// its OIDC discovery document is at Issuer +
	// "/.well-known/openid-configuration".
	Issuer string `json:"issuer"`
	// Audience is the aud the projected token must carry, e.g. "warden".
	Audience string `json:"audience"`
	// Tenant is the Warden tenant the cluster's workloads belong to.
	Tenant string `json:"tenant"`
	// ServiceAccounts maps "system:serviceaccount:<k8s-namespace>:<name>"
	// to a Warden workload. Accounts not listed are refused.
	ServiceAccounts map[string]WorkloadRef `json:"serviceAccounts"`
}

// Validate names the first missing or malformed field.
func (k KubernetesIssuer) Validate() error {
	switch {
	case !strings.HasPrefix(k.Issuer, "https://") && !strings.HasPrefix(k.Issuer, "http://"):
		return fmt.Errorf("kubernetes issuer: Issuer %q must be an http(s) URL", k.Issuer)
	case k.Audience == "":
		return fmt.Errorf("kubernetes issuer %s: Audience is required", k.Issuer)
	case k.Tenant == "":
		return fmt.Errorf("kubernetes issuer %s: Tenant is required", k.Issuer)
	}
	for sa, ref := range k.ServiceAccounts {
		if !strings.HasPrefix(sa, "system:serviceaccount:") || strings.Count(sa, ":") != 3 {
			return fmt.Errorf("kubernetes issuer %s: ServiceAccounts key %q must be system:serviceaccount:<namespace>:<name>", k.Issuer, sa)
		}
		if ref.Namespace == "" || ref.Agent == "" {
			return fmt.Errorf("kubernetes issuer %s: ServiceAccounts[%q] needs namespace and agent", k.Issuer, sa)
		}
	}
	return nil
}

// k8sVerifier verifies service-account tokens of one issuer.
type k8sVerifier struct {
	cfg KubernetesIssuer
	hc  *http.Client
	now func() time.Time

	mu   sync.Mutex
	jwks *jwksCache
}

// k8sClaims are the claims read from a service-account token.
type k8sClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	Audience  audience `json:"aud"`
	Expiry    *int64   `json:"exp"`
	NotBefore *int64   `json:"nbf"`
}

// audience is aud as a string or a list of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = audience{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("aud must be a string or a list of strings")
	}
	*a = l
	return nil
}

func (a audience) has(s string) bool {
	for _, v := range a {
		if v == s {
			return true
		}
	}
	return false
}

// keys returns the issuer's JWKS cache, reading OIDC discovery first. A
// failed discovery is retried on the next call.
func (v *k8sVerifier) keys(ctx context.Context) (*jwksCache, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.jwks != nil {
		return v.jwks, nil
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, v.hc, strings.TrimRight(v.cfg.Issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
		return nil, fmt.Errorf("oidc discovery of %s: %w", v.cfg.Issuer, err)
	}
	if doc.Issuer != v.cfg.Issuer {
		return nil, fmt.Errorf("oidc discovery of %s names issuer %q", v.cfg.Issuer, doc.Issuer)
	}
	if !strings.HasPrefix(doc.JWKSURI, "https://") && !strings.HasPrefix(doc.JWKSURI, "http://") {
		return nil, fmt.Errorf("oidc discovery of %s: jwks_uri %q is not an http(s) URL", v.cfg.Issuer, doc.JWKSURI)
	}
	v.jwks = &jwksCache{url: doc.JWKSURI, hc: v.hc, now: v.now, ttl: 5 * time.Minute, minRefetch: 10 * time.Second, accept: acceptRSAOrP256}
	return v.jwks, nil
}

// verify checks a service-account token (RS256 or ES256 by a key of the
// issuer's JWKS, iss, aud, exp with no leeway, nbf) and returns the
// workload its subject maps to.
func (v *k8sVerifier) verify(ctx context.Context, j *jws, c k8sClaims) (WorkloadRef, error) {
	jwks, err := v.keys(ctx)
	if err != nil {
		return WorkloadRef{}, err
	}
	pk, err := jwks.key(ctx, j.header.Kid)
	if err != nil {
		return WorkloadRef{}, err
	}
	digest := sha256.Sum256([]byte(j.signingInput))
	switch j.header.Alg {
	case AlgRS256:
		rk, ok := pk.(*rsa.PublicKey)
		if !ok || rsa.VerifyPKCS1v15(rk, crypto.SHA256, digest[:], j.signature) != nil {
			return WorkloadRef{}, refuse("service-account token: bad signature")
		}
	case AlgES256:
		ek, ok := pk.(*ecdsa.PublicKey)
		if !ok || len(j.signature) != 64 {
			return WorkloadRef{}, refuse("service-account token: bad signature")
		}
		r, s := new(big.Int).SetBytes(j.signature[:32]), new(big.Int).SetBytes(j.signature[32:])
		if !ecdsa.Verify(ek, digest[:], r, s) {
			return WorkloadRef{}, refuse("service-account token: bad signature")
		}
	default:
		return WorkloadRef{}, refuse("service-account token: algorithm %q is not accepted", j.header.Alg)
	}
	now := v.now()
	switch {
	case c.Issuer != v.cfg.Issuer:
		return WorkloadRef{}, refuse("service-account token: issuer %q", c.Issuer)
	case !c.Audience.has(v.cfg.Audience):
		return WorkloadRef{}, refuse("service-account token: audience must include %q", v.cfg.Audience)
	case c.Expiry == nil || !now.Before(time.Unix(*c.Expiry, 0)):
		return WorkloadRef{}, refuse("service-account token expired")
	case c.NotBefore != nil && now.Add(nbfLeeway).Before(time.Unix(*c.NotBefore, 0)):
		return WorkloadRef{}, refuse("service-account token not valid yet")
	}
	ref, ok := v.cfg.ServiceAccounts[c.Subject]
	if !ok {
		return WorkloadRef{}, fmt.Errorf("%w: service account %q is not mapped to a Warden agent", errNotMapped, c.Subject)
	}
	return ref, nil
}

// errNotMapped is a verified service account with no Warden mapping: the
// caller is authenticated but not allowed (403).
var errNotMapped = errors.New("service account not mapped")

// kubernetesVerifiers routes service-account tokens to their issuer.
type kubernetesVerifiers struct {
	byIssuer map[string]*k8sVerifier
}

func newKubernetesVerifiers(cfgs []KubernetesIssuer, hc *http.Client, now func() time.Time) (*kubernetesVerifiers, error) {
	kv := &kubernetesVerifiers{byIssuer: map[string]*k8sVerifier{}}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		kv.byIssuer[c.Issuer] = &k8sVerifier{cfg: c, hc: hc, now: now}
	}
	return kv, nil
}

// verify returns the tenant and workload of a service-account token.
func (kv *kubernetesVerifiers) verify(ctx context.Context, token string) (string, WorkloadRef, error) {
	j, err := parseJWS(token)
	if err != nil {
		return "", WorkloadRef{}, err
	}
	var c k8sClaims
	if err := json.Unmarshal(j.payload, &c); err != nil {
		return "", WorkloadRef{}, refuse("service-account token claims: %v", err)
	}
	v, ok := kv.byIssuer[c.Issuer]
	if !ok {
		return "", WorkloadRef{}, refuse("service-account token from an issuer that is not configured")
	}
	ref, err := v.verify(ctx, j, c)
	return v.cfg.Tenant, ref, err
}
