package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Pin pins an MCPServer to what its last discovery found (discovering it
// first when it never was): spec.pinnedVersion becomes
// "<version>@<tools hash>" through the apply pipeline (so the manifests of
// its agents carry the pin), and status.pin keeps every tool's hash so that
// drift names the tool that moved.
func (s *Service) Pin(ctx context.Context, p auth.Principal, ns, name string) (*resource.Object, error) {
	if err := s.cfg.Authz.Authorize(ctx, p, auth.VerbApply, ns, "mcpservers"); err != nil {
		return nil, forbidden(err)
	}
	if s.cfg.Applier == nil {
		return nil, apierr.New(apierr.CodeUnavailable, "this MCP gateway cannot write pins: it runs without the apply pipeline")
	}
	obj, err := s.get(ctx, p.Tenant, ns, name)
	if err != nil {
		return nil, err
	}
	st, _ := resource.DecodeStatus[resource.MCPServerStatus](obj)
	if st.DiscoveredAt == "" || st.Error != "" {
		if obj, err = s.discoverOne(ctx, auth.SystemPrincipal(p.Tenant), ns, name); err != nil {
			return nil, err
		}
		st, _ = resource.DecodeStatus[resource.MCPServerStatus](obj)
		if st.Error != "" {
			return nil, apierr.New(apierr.CodeUnavailable, "MCP server %q cannot be discovered, so there is nothing to pin: %s", name, st.Error)
		}
	}
	version := ""
	if st.Server != nil {
		version = st.Server.Version
	}
	pinned := resource.MCPPinString(version, st.ToolsHash)
	doc := &resource.Object{APIVersion: obj.APIVersion, Kind: obj.Kind, Metadata: resource.ObjectMeta{
		Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace, Labels: obj.Metadata.Labels, Annotations: obj.Metadata.Annotations,
	}, Spec: maps.Clone(obj.Spec)}
	doc.Spec["pinnedVersion"] = pinned
	if _, err := s.cfg.Applier.Apply(ctx, p, []*resource.Object{doc}); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	return s.updateStatus(ctx, p.Tenant, ns, name, func(cur *resource.Object, st *resource.MCPServerStatus) error {
		v := ""
		if st.Server != nil {
			v = st.Server.Version
		}
		st.Pin = &resource.MCPPin{Version: v, ToolsHash: st.ToolsHash, Tools: toolHashes(st.Tools), PinnedAt: timestamp(now), PinnedBy: p.Subject}
		if resource.MCPPinString(v, st.ToolsHash) == pinned {
			st.Drift = nil
		}
		return nil
	})
}

// Quarantine quarantines an MCPServer: every call is refused with
// Quarantined until Unquarantine.
func (s *Service) Quarantine(ctx context.Context, p auth.Principal, ns, name, reason string) (*resource.Object, error) {
	if err := s.cfg.Authz.Authorize(ctx, p, auth.VerbApply, ns, "mcpservers"); err != nil {
		return nil, forbidden(err)
	}
	if reason == "" {
		reason = "quarantined by " + p.Subject
	}
	now := s.now().UTC()
	obj, err := s.updateStatus(ctx, p.Tenant, ns, name, func(_ *resource.Object, st *resource.MCPServerStatus) error {
		if st.Quarantine == nil {
			st.Quarantine = &resource.MCPQuarantine{Reason: reason, By: p.Subject, At: timestamp(now)}
		}
		return nil
	})
	if err == nil {
		// This replica stops its process now; the others when they see
		// the commit (stdioServers.reconcile).
		s.stdio.stop(stdioKey{p.Tenant, ns, name}, "quarantined")
	}
	return obj, err
}

// Unquarantine lifts a quarantine. It needs the admin role (status
// writes), and is refused while the server drifts from its pin: pin the
// new definitions first, after reviewing them.
func (s *Service) Unquarantine(ctx context.Context, p auth.Principal, ns, name string) (*resource.Object, error) {
	if err := s.cfg.Authz.Authorize(ctx, p, auth.VerbWriteStatus, ns, "mcpservers"); err != nil {
		return nil, forbidden(err)
	}
	return s.updateStatus(ctx, p.Tenant, ns, name, func(cur *resource.Object, st *resource.MCPServerStatus) error {
		if q, _ := cur.Spec["quarantined"].(bool); q {
			return apierr.New(apierr.CodeConflict, "MCP server %q is quarantined by its spec (spec.quarantined: true): apply it without that field", name)
		}
		if st.Drift != nil {
			return apierr.New(apierr.CodeConflict, "MCP server %q drifts from its pin (%s): review the new definitions and pin them (POST /v1/mcp/%s/pin) before lifting the quarantine", name, driftReason(st.Drift), name)
		}
		st.Quarantine = nil
		return nil
	})
}

// updateStatus changes an MCPServer's status in one transaction.
func (s *Service) updateStatus(ctx context.Context, tenant, ns, name string, fn func(cur *resource.Object, st *resource.MCPServerStatus) error) (*resource.Object, error) {
	var out *resource.Object
	key := resource.Key{Kind: resource.KindMCPServer, Namespace: ns, Name: name}
	err := s.writeStatus(ctx, tenant, key, func(_ context.Context, _ store.Tx, cur *resource.Object, st *resource.MCPServerStatus) error {
		return fn(cur, st)
	}, &out)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(apierr.CodeNotFound, "MCP server %q not found in namespace %q", name, ns)
	}
	if _, ok := apierr.As(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: update status of %s/%s: %w", ns, name, err)
	}
	return out, nil
}

// writeStatus reads an MCPServer, lets fn change its status and writes it
// back on the condition that nobody wrote it in between (discoveries, pins
// and quarantines of several requests and replicas race), trying again on a
// conflict.
func (s *Service) writeStatus(ctx context.Context, tenant string, key resource.Key, fn func(ctx context.Context, tx store.Tx, cur *resource.Object, st *resource.MCPServerStatus) error, out **resource.Object) error {
	for attempt := 0; ; attempt++ {
		err := s.st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			cur, err := tx.ResourceGet(ctx, key)
			if err != nil {
				return err
			}
			st, err := resource.DecodeStatus[resource.MCPServerStatus](cur)
			if err != nil {
				st = resource.MCPServerStatus{}
			}
			before := quarantineText(st.Quarantine)
			if err := fn(ctx, tx, cur, &st); err != nil {
				return err
			}
			m, err := resource.ToMap(st)
			if err != nil {
				return err
			}
			if *out, err = tx.ResourceUpdateStatus(ctx, key, m, cur.Metadata.ResourceVersion); err != nil {
				return err
			}
			if after := quarantineText(st.Quarantine); after != before {
				return markManifests(ctx, tx, key.Namespace, key.Name, after)
			}
			return nil
		})
		if errors.Is(err, store.ErrConflict) && attempt < 10 && ctx.Err() == nil {
			continue
		}
		return err
	}
}

func quarantineText(q *resource.MCPQuarantine) string {
	if q == nil {
		return ""
	}
	return q.Reason
}

// StatusQuarantinedMCPServers is the status field of a
// CompiledAgentManifest that names the quarantined MCP servers it uses,
// with the reasons: the manifest says so as soon as the quarantine is set
// or lifted.
const StatusQuarantinedMCPServers = "quarantinedMCPServers"

// markManifests records (reason non-empty) or clears a server's quarantine
// in the status of the namespace's compiled manifests that use it.
func markManifests(ctx context.Context, tx store.Tx, ns, server, reason string) error {
	manifests, err := store.ListAll(ctx, tx, resource.KindCompiledAgentManifest, nil)
	if err != nil {
		return err
	}
	for _, m := range manifests {
		if m.Metadata.Namespace != ns || !usesServer(m, server) {
			continue
		}
		st := maps.Clone(m.Status)
		if st == nil {
			st = map[string]any{}
		}
		q, _ := st[StatusQuarantinedMCPServers].(map[string]any)
		q = maps.Clone(q)
		if q == nil {
			q = map[string]any{}
		}
		if reason == "" {
			delete(q, server)
		} else {
			q[server] = reason
		}
		if len(q) == 0 {
			delete(st, StatusQuarantinedMCPServers)
		} else {
			st[StatusQuarantinedMCPServers] = q
		}
		if _, err := tx.ResourceUpdateStatus(ctx, m.Key(), st, ""); err != nil {
			return fmt.Errorf("mark manifest %s: %w", m.Metadata.Name, err)
		}
	}
	return nil
}

// usesServer reports whether a compiled manifest lists an MCP server.
func usesServer(m *resource.Object, server string) bool {
	list, _ := m.Spec["mcpServers"].([]any)
	for _, it := range list {
		if e, ok := it.(map[string]any); ok && e["name"] == server {
			return true
		}
	}
	return false
}

// discoverPeriodically runs DiscoverAll each DiscoverEvery (a process
// without the cluster's discover-mcp job).
func (s *Service) discoverPeriodically(ctx context.Context) {
	t := time.NewTicker(s.cfg.DiscoverEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.base.Done():
			return
		case <-t.C:
		}
		if err := s.DiscoverAll(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "periodic MCP discovery", "err", err)
		}
	}
}

// DiscoverAll discovers every MCPServer of every tenant, so that drift is
// found without anyone asking. A server that cannot be reached records
// status.error; the errors returned are those of the store.
func (s *Service) DiscoverAll(ctx context.Context) error {
	tenants, err := s.st.TenantList(ctx)
	if err != nil {
		return fmt.Errorf("mcp: list tenants: %w", err)
	}
	var errs []error
	for _, tn := range tenants {
		p := auth.SystemPrincipal(tn.ID)
		var all []*resource.Object
		err := s.st.View(ctx, tn.ID, func(ctx context.Context, r store.Reader) error {
			var err error
			all, err = store.ListAll(ctx, r, resource.KindMCPServer, nil)
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", tn.ID, err))
			continue
		}
		for _, o := range all {
			if _, err := s.discoverOne(ctx, p, o.Metadata.Namespace, o.Metadata.Name); err != nil && ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("tenant %s: %s: %w", tn.ID, o.Key().String(), err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Service) handlePin(w http.ResponseWriter, r *http.Request) {
	s.serverAction(w, r, "mcpservers/pin", func(ctx context.Context, p auth.Principal, ns, name string, _ actionBody) (*resource.Object, error) {
		return s.Pin(ctx, p, ns, name)
	})
}

func (s *Service) handleQuarantine(w http.ResponseWriter, r *http.Request) {
	s.serverAction(w, r, "mcpservers/quarantine", func(ctx context.Context, p auth.Principal, ns, name string, b actionBody) (*resource.Object, error) {
		return s.Quarantine(ctx, p, ns, name, b.Reason)
	})
}

func (s *Service) handleUnquarantine(w http.ResponseWriter, r *http.Request) {
	s.serverAction(w, r, "mcpservers/unquarantine", func(ctx context.Context, p auth.Principal, ns, name string, _ actionBody) (*resource.Object, error) {
		return s.Unquarantine(ctx, p, ns, name)
	})
}

// actionBody is the optional body of pin, quarantine and unquarantine.
type actionBody struct {
	Reason string `json:"reason"`
}

// serverAction authenticates, runs one action on {server}, audits it with
// the caller's reason and answers the MCPServer.
func (s *Service) serverAction(w http.ResponseWriter, r *http.Request, verb string, fn func(ctx context.Context, p auth.Principal, ns, name string, b actionBody) (*resource.Object, error)) {
	p, err := s.authenticate(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	raw, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b actionBody
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &b); err != nil {
			s.fail(w, r, apierr.New(apierr.CodeInvalidRequest, `the body is {"reason": "…"} or empty: %s`, err))
			return
		}
	}
	ns, name := namespace(p, r), r.PathValue("server")
	ctx := authz.EnsureTrail(r.Context())
	obj, err := fn(ctx, p, ns, name, b)
	s.audit(ctx, p, verb, ns, "MCPServer/"+name, b.Reason, err)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, obj)
}
