package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// TokenPath is the token exchange endpoint.
const TokenPath = "/v1/auth/token"

// Grant and token types of the token exchange (RFC 8693 names where one
// exists).
const (
	GrantAPIKey        = "api_key"
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeJWT       = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
)

// TokenRequest is the body of POST /v1/auth/token.
type TokenRequest struct {
	GrantType string `json:"grant_type"`
	// APIKey is an agent-bound Warden API key (grant api_key).
	APIKey string `json:"api_key,omitempty"`
	// SubjectToken is a Kubernetes service-account token (grant
	// token-exchange), of SubjectTokenType TokenTypeJWT.
	SubjectToken     string `json:"subject_token,omitempty"`
	SubjectTokenType string `json:"subject_token_type,omitempty"`
	// Audience is the service the token is for, e.g. warden:tool-gateway.
	Audience string `json:"audience"`
	// Environment is the environment the agent runs in; optional when the
	// agent is deployed to exactly one.
	Environment string `json:"environment,omitempty"`
	// Agent and Namespace, when given, must be the credential's.
	Agent     string `json:"agent,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// TokenResponse is the answer of POST /v1/auth/token.
type TokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int    `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
}

// APIKeyVerifier verifies an API key at the moment of the call, so a
// revoked key is refused at once. *auth.Authenticator implements it.
type APIKeyVerifier interface {
	VerifyAPIKey(ctx context.Context, secret string) (auth.Principal, error)
}

// Viewer reads a tenant's resources. store.Store implements it.
type Viewer interface {
	View(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Reader) error) error
}

// ExchangeDeps are the collaborators of a TokenExchange.
type ExchangeDeps struct {
	Issuer  *Issuer
	APIKeys APIKeyVerifier
	Store   Viewer
	// Kubernetes lists the clusters whose service-account tokens are
	// accepted; empty disables the token-exchange grant.
	Kubernetes []KubernetesIssuer
	// HTTPClient fetches Kubernetes OIDC discovery and keys; nil means a
	// client with a 10 s timeout.
	HTTPClient *http.Client
	// Audiences are the audiences a token may be issued for; nil means
	// AudienceToolGateway, AudienceControlPlane, AudienceModelRouter,
	// AudienceMCPGateway, AudienceMemory, AudienceTrace and AudienceRAG.
	Audiences []string
	Now       func() time.Time
	Logger    *slog.Logger
}

// TokenExchange issues workload tokens for agent credentials.
type TokenExchange struct {
	d   ExchangeDeps
	k8s *kubernetesVerifiers
}

// NewTokenExchange checks d and returns the exchange.
func NewTokenExchange(d ExchangeDeps) (*TokenExchange, error) {
	if d.Issuer == nil || d.APIKeys == nil || d.Store == nil {
		return nil, errors.New("workload: NewTokenExchange needs Issuer, APIKeys and Store")
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if d.Audiences == nil {
		d.Audiences = []string{AudienceToolGateway, AudienceControlPlane, AudienceModelRouter, AudienceMCPGateway, AudienceMemory, AudienceTrace}
		d.Audiences = append(d.Audiences, AudienceRAG)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	k8s, err := newKubernetesVerifiers(d.Kubernetes, d.HTTPClient, d.Now)
	if err != nil {
		return nil, err
	}
	return &TokenExchange{d: d, k8s: k8s}, nil
}

// TokenHandler serves POST /v1/auth/token. Mount it outside the
// authenticated group: the credential is in the body. The body is JSON or,
// as RFC 8693 clients send it, a form. Errors use Warden's error body.
func (x *TokenExchange) TokenHandler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-store")
		var req TokenRequest
		if strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationForm) {
			req = TokenRequest{GrantType: c.FormValue("grant_type"), APIKey: c.FormValue("api_key"),
				SubjectToken: c.FormValue("subject_token"), SubjectTokenType: c.FormValue("subject_token_type"),
				Audience: c.FormValue("audience"), Environment: c.FormValue("environment"),
				Agent: c.FormValue("agent"), Namespace: c.FormValue("namespace")}
		} else if err := json.Unmarshal(c.Body(), &req); err != nil {
			return writeErr(c, apierr.New(apierr.CodeInvalidRequest, "the body must be a JSON object: %v", err))
		}
		resp, err := x.Exchange(c.UserContext(), req)
		if err != nil {
			e, ok := apierr.As(err)
			if !ok {
				x.d.Logger.ErrorContext(c.UserContext(), "token exchange failed", "grant_type", req.GrantType, "err", err)
				e = apierr.New(apierr.CodeInternal, "the token could not be issued")
			}
			return writeErr(c, e)
		}
		return c.JSON(resp)
	}
}

func writeErr(c *fiber.Ctx, e *apierr.Error) error {
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}

// Exchange verifies the credential of req and issues a token. Refusals are
// *apierr.Error (InvalidRequest, Unauthenticated, Forbidden); other errors
// are internal.
func (x *TokenExchange) Exchange(ctx context.Context, req TokenRequest) (*TokenResponse, error) {
	if req.Audience == "" {
		return nil, apierr.New(apierr.CodeInvalidRequest, "audience is required (one of %s)", strings.Join(x.d.Audiences, ", "))
	}
	if !slices.Contains(x.d.Audiences, req.Audience) {
		return nil, apierr.New(apierr.CodeInvalidRequest, "unknown audience %q (one of %s)", req.Audience, strings.Join(x.d.Audiences, ", "))
	}
	var tenant string
	var ref WorkloadRef
	switch req.GrantType {
	case GrantAPIKey:
		if !strings.HasPrefix(req.APIKey, auth.APIKeyPrefix) {
			return nil, apierr.New(apierr.CodeInvalidRequest, "api_key must be a Warden API key (%s…)", auth.APIKeyPrefix)
		}
		p, err := x.d.APIKeys.VerifyAPIKey(ctx, req.APIKey)
		if errors.Is(err, auth.ErrUnauthenticated) {
			return nil, apierr.New(apierr.CodeUnauthenticated, "the API key is unknown, revoked or expired")
		}
		if err != nil {
			return nil, err
		}
		if p.Agent == "" {
			return nil, apierr.New(apierr.CodeForbidden, "the API key is not bound to an agent; create an agent-bound key")
		}
		if p.Namespace == "" || p.Namespace == auth.AllNamespaces {
			return nil, apierr.New(apierr.CodeForbidden, "an agent-bound API key must be scoped to one namespace")
		}
		tenant, ref = p.Tenant, WorkloadRef{Namespace: p.Namespace, Agent: p.Agent}
	case GrantTokenExchange:
		if req.SubjectTokenType != TokenTypeJWT && req.SubjectTokenType != TokenTypeIDToken {
			return nil, apierr.New(apierr.CodeInvalidRequest, "subject_token_type must be %s", TokenTypeJWT)
		}
		if len(x.k8s.byIssuer) == 0 {
			return nil, apierr.New(apierr.CodeInvalidRequest, "no Kubernetes issuer is configured for token exchange")
		}
		var err error
		tenant, ref, err = x.k8s.verify(ctx, req.SubjectToken)
		switch {
		case errors.Is(err, errNotMapped):
			return nil, apierr.New(apierr.CodeForbidden, "%s", err.Error())
		case errors.Is(err, ErrInvalidToken):
			return nil, apierr.New(apierr.CodeUnauthenticated, "the subject token was refused: %s", strings.TrimPrefix(err.Error(), ErrInvalidToken.Error()+": "))
		case err != nil:
			return nil, apierr.New(apierr.CodeUnauthenticated, "the subject token could not be verified: the cluster issuer's keys are unavailable")
		}
		if ref.Environment != "" {
			if req.Environment != "" && req.Environment != ref.Environment {
				return nil, apierr.New(apierr.CodeForbidden, "this service account may only ask for environment %q", ref.Environment)
			}
			req.Environment = ref.Environment
		}
	case "":
		return nil, apierr.New(apierr.CodeInvalidRequest, "grant_type is required: %s or %s", GrantAPIKey, GrantTokenExchange)
	default:
		return nil, apierr.New(apierr.CodeInvalidRequest, "unsupported grant_type %q", req.GrantType)
	}
	if req.Agent != "" && req.Agent != ref.Agent {
		return nil, apierr.New(apierr.CodeForbidden, "the credential is bound to agent %q, not %q", ref.Agent, req.Agent)
	}
	if req.Namespace != "" && req.Namespace != ref.Namespace {
		return nil, apierr.New(apierr.CodeForbidden, "the credential is scoped to namespace %q, not %q", ref.Namespace, req.Namespace)
	}
	env, err := x.environment(ctx, tenant, ref, req.Environment)
	if err != nil {
		return nil, err
	}
	tok, exp, err := x.d.Issuer.Issue(ctx, IssueParams{Tenant: tenant, Namespace: ref.Namespace, Agent: ref.Agent, Environment: env, Audience: req.Audience})
	if err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: tok, TokenType: "Bearer", IssuedTokenType: TokenTypeJWT,
		ExpiresIn: int(math.Ceil(exp.Sub(x.d.Now()).Seconds()))}, nil
}

// environment returns the environment to put in the token: want when the
// agent has a Deployment to it in its namespace, or the only environment
// it is deployed to when want is empty.
func (x *TokenExchange) environment(ctx context.Context, tenant string, ref WorkloadRef, want string) (string, error) {
	var envs []string
	err := x.d.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		cont := ""
		for {
			l, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindDeployment, Namespace: ref.Namespace, Limit: store.MaxPageSize, Continue: cont})
			if err != nil {
				return fmt.Errorf("list deployments of %s: %w", ref.Namespace, err)
			}
			for _, d := range l.Items {
				spec, err := resource.DecodeSpec[resource.DeploymentSpec](d)
				if err == nil && spec.AgentRef.Name == ref.Agent && !slices.Contains(envs, spec.Environment) {
					envs = append(envs, spec.Environment)
				}
			}
			if l.Continue == "" {
				return nil
			}
			cont = l.Continue
		}
	})
	if err != nil {
		return "", err
	}
	slices.Sort(envs)
	switch {
	case len(envs) == 0:
		return "", apierr.New(apierr.CodeForbidden, "agent %q is not deployed in namespace %q", ref.Agent, ref.Namespace)
	case want == "" && len(envs) == 1:
		return envs[0], nil
	case want == "":
		return "", apierr.New(apierr.CodeInvalidRequest, "environment is required: agent %q is deployed to %s", ref.Agent, strings.Join(envs, ", "))
	case !slices.Contains(envs, want):
		return "", apierr.New(apierr.CodeForbidden, "agent %q is not deployed to environment %q in namespace %q", ref.Agent, want, ref.Namespace)
	}
	return want, nil
}
