package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// API key management: POST /v1/apikeys, GET /v1/apikeys and
// POST /v1/apikeys/{id}/revoke. The secret is returned once, by the create
// call, and stored only as its SHA-256; revocation takes effect at once
// because the Authenticator looks every key up in the store on every
// request (there is deliberately no verified-key cache, see
// docs/performance.md).

// MintableRoles are the roles an API key may be created with over the API.
// Owner and break-glass are never carried by a minted key; agent-bound keys
// get authz.RoleAgent.
var MintableRoles = authz.NamespaceRoles()

// APIKeyTouchInterval is how often, at most, a key's lastUsedAt is written
// per key and process.
const APIKeyTouchInterval = time.Minute

// maxTouchWriters bounds the background lastUsedAt writes in flight; a use
// that finds them all busy is not recorded (a later one is).
const maxTouchWriters = 4

func viewOf(k store.APIKey) api.APIKey {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return api.APIKey{APIVersion: resource.GroupVersion, Kind: "APIKey", ID: k.ID, Name: k.Name, Namespace: k.Namespace,
		Role: k.Role, Agent: k.Agent, CreatedAt: k.CreatedAt.UTC(), ExpiresAt: utc(k.ExpiresAt), RevokedAt: utc(k.RevokedAt),
		LastUsedAt: utc(k.LastUsedAt)}
}

// apiKeyRoutes mounts API key management on the authenticated /v1 group
// and sets up the lastUsedAt throttle.
func (s *Server) apikeyRoutes(v1 fiber.Router) {
	s.keyUse = newKeyUse(s)
	v1.Post("/apikeys", s.handleAPIKeyCreate)
	v1.Get("/apikeys", s.handleAPIKeyList)
	v1.Post("/apikeys/:id/revoke", s.handleAPIKeyRevoke)
}

// domainOf is the authorization namespace of a key scope: "*" keys are
// tenant-scope ("").
func domainOf(ns string) string {
	if ns == auth.AllNamespaces {
		return ""
	}
	return ns
}

// handleAPIKeyCreate mints a key. See createAPIKey for the rules.
func (s *Server) handleAPIKeyCreate(c *fiber.Ctx) error {
	a := auditOf(c)
	a.verb, a.resource = authz.VerbCreate, "APIKey"
	var req api.APIKeyCreateRequest
	if err := decodeStrict(c.Body(), &req, "a JSON object {name, namespace, role, agent?, expiresIn?}"); err != nil {
		return err
	}
	a.namespace = req.Namespace
	if req.Name != "" {
		a.resource = "APIKey/" + req.Name
	}
	secret, key, err := s.createAPIKey(c.UserContext(), principal(c), req)
	if err != nil {
		return err
	}
	v := viewOf(key)
	v.Secret = secret
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(http.StatusCreated).JSON(v)
}

// createAPIKey mints an API key for p and returns its secret (shown once)
// and the stored key. Rules: the name is a DNS-1123 label unique in the
// tenant (revoked keys keep their names); the namespace exists or is "*"
// (tenant-wide); p needs create on apikeys there; the role is one of
// MintableRoles and p must itself hold every permission of that role in
// that namespace (so nobody mints above their own role); an agent-bound
// key (agent set) names an existing agent of a single namespace and gets
// role "agent". Refusals are *apierr.Error.
func (s *Server) createAPIKey(ctx context.Context, p auth.Principal, req api.APIKeyCreateRequest) (string, store.APIKey, error) {
	var problems []string
	if !resource.IsDNS1123Label(req.Name) {
		problems = append(problems, fmt.Sprintf("name %q must be a DNS-1123 label (lower-case letters, digits and '-', at most 63)", req.Name))
	}
	switch {
	case req.Namespace == "":
		problems = append(problems, `namespace is required (a namespace, or "*" for every namespace of the tenant)`)
	case req.Namespace != auth.AllNamespaces && !resource.IsDNS1123Label(req.Namespace):
		problems = append(problems, fmt.Sprintf("namespace %q must be a DNS-1123 label or \"*\"", req.Namespace))
	}
	role := req.Role
	if req.Agent != "" {
		switch {
		case !resource.IsDNS1123Label(req.Agent):
			problems = append(problems, fmt.Sprintf("agent %q must be a DNS-1123 label", req.Agent))
		case req.Namespace == auth.AllNamespaces:
			problems = append(problems, "an agent-bound key must be scoped to the agent's namespace, not \"*\"")
		}
		if role != "" && role != authz.RoleAgent {
			problems = append(problems, fmt.Sprintf("an agent-bound key has role %q; leave role empty", authz.RoleAgent))
		}
		role = authz.RoleAgent
	} else if !slices.Contains(MintableRoles, role) {
		problems = append(problems, fmt.Sprintf("role %q must be one of %s (owner and breakglass keys are never minted over the API)",
			role, strings.Join(MintableRoles, ", ")))
	}
	var expiresAt *time.Time
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("expiresIn %q must be a positive duration such as 720h", req.ExpiresIn))
		} else {
			t := s.now().Add(d).UTC().Truncate(time.Second)
			expiresAt = &t
		}
	}
	if len(problems) > 0 {
		return "", store.APIKey{}, apierr.New(apierr.CodeInvalidRequest, "invalid API key: %s", strings.Join(problems, "; ")).
			WithDetails(map[string]any{"problems": problems})
	}

	dom := domainOf(req.Namespace)
	if err := s.checkPrincipal(ctx, p, authz.VerbCreate, dom, authz.ObjAPIKeys); err != nil {
		return "", store.APIKey{}, err
	}
	if role != authz.RoleAgent {
		if err := s.holdsRole(ctx, p, role, dom); err != nil {
			return "", store.APIKey{}, err
		}
	}

	secret, hash, err := auth.NewAPIKeySecret()
	if err != nil {
		return "", store.APIKey{}, err
	}
	key := store.APIKey{ID: store.NewUID(), Tenant: p.Tenant, Name: req.Name, SecretHash: hash, Namespace: req.Namespace,
		Role: role, Agent: req.Agent, CreatedAt: s.now().UTC().Truncate(time.Microsecond), ExpiresAt: expiresAt}
	err = s.store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		if req.Namespace != auth.AllNamespaces {
			if _, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindNamespace, Name: req.Namespace}); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return apierr.New(apierr.CodeNotFound, "namespace %q not found", req.Namespace)
				}
				return err
			}
		}
		if req.Agent != "" {
			if _, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: req.Namespace, Name: req.Agent}); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return apierr.New(apierr.CodeNotFound, "agent %q not found in namespace %q", req.Agent, req.Namespace)
				}
				return err
			}
		}
		return tx.APIKeyInsert(ctx, key)
	})
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		return "", store.APIKey{}, apierr.New(apierr.CodeConflict,
			"an API key named %q already exists in this tenant (names are not reused, even after revocation)", req.Name)
	case err != nil:
		if _, ok := apierr.As(err); ok {
			return "", store.APIKey{}, err
		}
		return "", store.APIKey{}, storeError(err)
	}
	return secret, key, nil
}

// holdsRole refuses unless p holds every permission of role in namespace
// dom ("" = tenant scope). This is the "no minting above your own role"
// rule stated over permissions rather than a rank, so it is exact for
// roles that do not rank each other (an editor holds no approval decision,
// so it cannot mint an approver) and for grants from RoleBindings.
func (s *Server) holdsRole(ctx context.Context, p auth.Principal, role, dom string) error {
	for _, perm := range authz.Permissions(role) {
		_, err := s.authz.Decide(ctx, p, perm.Verb, dom, perm.Object)
		if errors.Is(err, auth.ErrForbidden) {
			where := fmt.Sprintf("namespace %q", dom)
			if dom == "" {
				where = "the whole tenant"
			}
			return apierr.New(apierr.CodeForbidden, "%s may not mint a key with role %s: it does not hold that role in %s (missing %s on %s)",
				p.Subject, role, where, perm.Verb, perm.Object)
		}
		if err != nil {
			return fmt.Errorf("check role %s: %w", role, err)
		}
	}
	return nil
}

// checkPrincipal is s.check without a fiber context.
func (s *Server) checkPrincipal(ctx context.Context, p auth.Principal, verb, ns, object string) error {
	err := s.authz.Authorize(ctx, p, verb, ns, object)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrForbidden):
		return forbidden(err)
	}
	return fmt.Errorf("authorize %s %s: %w", verb, object, err)
}

// handleAPIKeyList lists the tenant's keys the caller may list: all of them
// with a tenant-wide grant, otherwise those of the namespaces where it may
// list keys. ?namespace=NS lists one namespace's keys ("*" the tenant-wide
// keys).
func (s *Server) handleAPIKeyList(c *fiber.Ctx) error {
	a := auditOf(c)
	a.verb, a.resource = auth.VerbList, "APIKey"
	p := principal(c)
	want := c.Query("namespace")
	a.namespace = want
	tenantWide := false
	switch {
	case want != "":
		if err := s.check(c, auth.VerbList, domainOf(want), authz.ObjAPIKeys); err != nil {
			return err
		}
	default:
		err := s.check(c, auth.VerbList, "", authz.ObjAPIKeys)
		if err != nil && (p.Namespace == "" || p.Namespace == auth.AllNamespaces) {
			return err
		}
		if err != nil {
			// A namespace-scoped credential: it must at least be allowed
			// in its own namespace.
			if err := s.check(c, auth.VerbList, p.Namespace, authz.ObjAPIKeys); err != nil {
				return err
			}
		}
		tenantWide = err == nil
	}
	var keys []store.APIKey
	err := s.store.View(c.UserContext(), p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		keys, err = r.APIKeyList(ctx)
		return err
	})
	if err != nil {
		return storeError(err)
	}
	allowed := map[string]bool{}
	out := api.APIKeyList{APIVersion: resource.GroupVersion, Kind: "APIKeyList", Items: []api.APIKey{}}
	for _, k := range keys {
		switch {
		case want != "":
			if k.Namespace != want {
				continue
			}
		case !tenantWide:
			ok, seen := allowed[k.Namespace]
			if !seen {
				ok = k.Namespace != auth.AllNamespaces &&
					s.authz.Allowed(c.UserContext(), p, auth.VerbList, k.Namespace, authz.ObjAPIKeys)
				allowed[k.Namespace] = ok
			}
			if !ok {
				continue
			}
		}
		out.Items = append(out.Items, viewOf(k))
	}
	return c.JSON(out)
}

// handleAPIKeyRevoke revokes a key at once. Revoking a revoked key answers
// the key with its first revocation time.
func (s *Server) handleAPIKeyRevoke(c *fiber.Ctx) error {
	a := auditOf(c)
	a.verb, a.resource = "revoke", "APIKey"
	p := principal(c)
	id := c.Params("id")
	key, err := s.revokeAPIKey(c.UserContext(), p, id)
	if key != nil {
		a.namespace, a.resource = key.Namespace, "APIKey/"+key.Name
	}
	if errors.Is(err, store.ErrNotFound) {
		// Unknown ids answer 404 only to callers who may revoke keys
		// somewhere, so ids cannot be probed without that right.
		own := p.Namespace
		if own == "" {
			own = auth.AllNamespaces
		}
		if err := s.check(c, auth.VerbDelete, domainOf(own), authz.ObjAPIKeys); err != nil {
			return err
		}
		return notFound("API key %q not found", id)
	}
	if err != nil {
		if _, ok := apierr.As(err); ok {
			return err
		}
		return storeError(err)
	}
	return c.JSON(viewOf(*key))
}

// revokeAPIKey revokes key id for p if p may delete keys in its namespace;
// revoking a revoked key keeps the first time. It returns the key once it
// is found (also when p is refused, so callers can audit what was touched)
// and store.ErrNotFound for an unknown id. The API and the console share it.
func (s *Server) revokeAPIKey(ctx context.Context, p auth.Principal, id string) (*store.APIKey, error) {
	var key *store.APIKey
	err := s.store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		keys, err := tx.APIKeyList(ctx)
		if err != nil {
			return err
		}
		for i := range keys {
			if keys[i].ID == id {
				key = &keys[i]
				break
			}
		}
		if key == nil {
			return store.ErrNotFound
		}
		if err := s.checkPrincipal(ctx, p, auth.VerbDelete, domainOf(key.Namespace), authz.ObjAPIKeys); err != nil {
			return err
		}
		if key.RevokedAt == nil {
			t := s.now().UTC().Truncate(time.Microsecond)
			if err := tx.APIKeyRevoke(ctx, id, t); err != nil {
				return err
			}
			key.RevokedAt = &t
		}
		return nil
	})
	if err == nil {
		s.keyUse.forget(p.Tenant, key.Name)
	}
	return key, err
}

// keyUse throttles lastUsedAt writes: at most one per key per
// APIKeyTouchInterval in this process, written in the background by at most
// maxTouchWriters goroutines, so a request never waits for it.
type keyUse struct {
	s    *Server
	mu   sync.Mutex
	last map[string]time.Time
	sem  chan struct{}
}

func newKeyUse(s *Server) *keyUse {
	return &keyUse{s: s, last: map[string]time.Time{}, sem: make(chan struct{}, maxTouchWriters)}
}

// noteAPIKeyUse records that p, authenticated by the bearer credential in
// authorization, used the API. It does nothing for other credentials and
// returns at once: the write, when due, happens in the background. Call it
// from authenticate after a successful Authenticate.
func (s *Server) noteAPIKeyUse(p auth.Principal, authorization string) {
	if p.Kind != auth.KindAPIKey || s.keyUse == nil {
		return
	}
	s.keyUse.note(p, authorization)
}

func (u *keyUse) note(p auth.Principal, authorization string) {
	now := u.s.now()
	k := p.Tenant + "\x00" + p.Subject
	u.mu.Lock()
	if last, ok := u.last[k]; ok && now.Sub(last) < APIKeyTouchInterval {
		u.mu.Unlock()
		return
	}
	if len(u.last) > 100_000 {
		// Bound the map: forget everything rather than grow without limit;
		// the cost is one extra write per key.
		u.last = map[string]time.Time{}
	}
	u.last[k] = now
	u.mu.Unlock()
	select {
	case u.sem <- struct{}{}:
	default:
		u.mu.Lock()
		delete(u.last, k) // not recorded: let the next use try again
		u.mu.Unlock()
		return
	}
	secret := strings.TrimSpace(strings.TrimPrefix(authorization, "Bearer "))
	hash := auth.HashAPIKey(secret)
	go func() {
		defer func() { <-u.sem }()
		defer listener.LogPanic(context.Background(), u.s.log, "recording API key use", "")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		key, err := u.s.store.APIKeyLookup(ctx, hash)
		if err == nil {
			err = u.s.store.APIKeyTouch(ctx, p.Tenant, key.ID, now)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			u.s.log.WarnContext(ctx, "record api key use", "subject", p.Subject, "err", err)
		}
	}()
}

// forget drops a key's throttle entry (after revocation).
func (u *keyUse) forget(tenant, name string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	delete(u.last, tenant+"\x00"+auth.KindAPIKey+":"+name)
	u.mu.Unlock()
}
