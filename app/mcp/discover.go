package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/scan"
	"github.com/warden-dev/warden/app/store"
)

// AnnotationScan on an MCPServer says what a prompt-injection finding of
// medium or high severity in a tool definition does: "flag" (shown in
// status only), "block" (the default: the tool is withheld from agents) or
// "quarantine" (the whole server is quarantined).
const AnnotationScan = "warden.dev/mcp-scan"

// Scan policies of AnnotationScan.
const (
	ScanFlag       = "flag"
	ScanBlock      = "block"
	ScanQuarantine = "quarantine"
)

// systemActor is who quarantines on drift and findings.
const systemActor = "system:warden"

// discovered is what one discovery found on the wire.
type discovered struct {
	status resource.MCPServerStatus
}

// Discover discovers one MCPServer of namespace ns, or every one when
// server is empty, and returns them with their new status. A server that
// cannot be reached gets status.error and does not fail the others.
func (s *Service) Discover(ctx context.Context, p auth.Principal, ns, server string) ([]*resource.Object, error) {
	if err := s.cfg.Authz.Authorize(ctx, p, auth.VerbApply, ns, "mcpservers"); err != nil {
		return nil, forbidden(err)
	}
	names := []string{server}
	if server == "" {
		var all []*resource.Object
		err := s.st.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			all, err = store.ListAll(ctx, r, resource.KindMCPServer, nil)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("mcp: list MCP servers: %w", err)
		}
		names = names[:0]
		for _, o := range all {
			if o.Metadata.Namespace == ns {
				names = append(names, o.Metadata.Name)
			}
		}
	}
	out := make([]*resource.Object, 0, len(names))
	for _, n := range names {
		obj, err := s.discoverOne(ctx, p, ns, n)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// discoverOne discovers one server and writes its status.
func (s *Service) discoverOne(ctx context.Context, p auth.Principal, ns, name string) (*resource.Object, error) {
	obj, err := s.get(ctx, p.Tenant, ns, name)
	if err != nil {
		return nil, err
	}
	spec, err := resource.DecodeSpec[resource.MCPServerSpec](obj)
	if err != nil {
		return nil, apierr.New(apierr.CodeInvalidRequest, "MCP server %s: %s", name, err)
	}
	stdio := spec.Transport == resource.MCPTransportStdio
	if stdio && quarantineReason(obj) != "" {
		// Discovering would start the process: a quarantined stdio
		// server keeps the status of its last discovery.
		return obj, nil
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DiscoverTimeout)
	found, derr := s.fetch(dctx, p.Tenant, ns, name, spec)
	cancel()
	now := s.now().UTC()
	var quarantined *resource.MCPQuarantine
	var updated *resource.Object
	err = s.writeStatus(ctx, p.Tenant, obj.Key(), func(ctx context.Context, tx store.Tx, cur *resource.Object, st *resource.MCPServerStatus) error {
		st.LastAttemptAt = timestamp(now)
		quarantined = nil
		if derr != nil {
			st.Error = derr.Error()
			return nil
		}
		quarantined = s.merge(st, cur, found, now)
		if quarantined != nil {
			_, err := tx.AuditInsert(ctx, audit.Record{Time: now, Tenant: p.Tenant, Actor: systemActor, Verb: "mcpservers/quarantine",
				Namespace: ns, Resource: "MCPServer/" + name, Outcome: audit.OutcomeAllowed, Policy: authz.PolicySystem, Reason: quarantined.Reason})
			return err
		}
		return nil
	}, &updated)
	if err != nil {
		return nil, fmt.Errorf("mcp: record discovery of %s/%s: %w", ns, name, err)
	}
	if quarantined != nil {
		s.log.Warn("MCP server quarantined", "tenant", p.Tenant, "namespace", ns, "server", name, "reason", quarantined.Reason)
		if stdio {
			s.stdio.stop(stdioKey{p.Tenant, ns, name}, "quarantined")
		}
	}
	return updated, nil
}

// get reads one MCPServer.
func (s *Service) get(ctx context.Context, tenant, ns, name string) (*resource.Object, error) {
	var obj *resource.Object
	err := s.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		obj, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindMCPServer, Namespace: ns, Name: name})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(apierr.CodeNotFound, "MCP server %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: read MCP server %s/%s: %w", ns, name, err)
	}
	return obj, nil
}

// fetch connects, initializes and lists what the server offers. A stdio
// server is asked through its process's session, shared with calls (and
// started when it runs no process).
func (s *Service) fetch(ctx context.Context, tenant, ns, name string, spec resource.MCPServerSpec) (*discovered, error) {
	var cs *sdk.ClientSession
	transport := TransportStdio
	var err error
	if spec.Transport == resource.MCPTransportStdio {
		cs, err = s.stdio.session(ctx, stdioKey{tenant, ns, name}, spec)
	} else {
		cs, transport, err = s.dial(ctx, spec)
		if cs != nil {
			defer func() { _ = cs.Close() }()
		}
	}
	if err != nil {
		return nil, err
	}
	init := cs.InitializeResult()
	d := &discovered{}
	st := &d.status
	st.Transport = transport
	if init != nil {
		st.ProtocolVersion = init.ProtocolVersion
		if init.ServerInfo != nil {
			st.Server = &resource.MCPImplementation{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version}
		}
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		ts, err := toolStatus(t)
		if err != nil {
			return nil, err
		}
		st.Tools = append(st.Tools, ts)
	}
	slices.SortFunc(st.Tools, func(a, b resource.MCPToolStatus) int { return strings.Compare(a.Name, b.Name) })
	caps := (*sdk.ServerCapabilities)(nil)
	if init != nil {
		caps = init.Capabilities
	}
	if caps != nil && caps.Prompts != nil {
		for pr, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("prompts/list: %w", err)
			}
			st.Prompts = append(st.Prompts, resource.MCPPromptStatus{Name: pr.Name, Description: pr.Description})
		}
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("resources/list: %w", err)
			}
			st.Resources = append(st.Resources, resource.MCPResourceStatus{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType})
		}
	}
	hashes := make([]string, 0, len(st.Tools))
	for _, t := range st.Tools {
		hashes = append(hashes, t.Name+"="+t.Hash)
	}
	if st.ToolsHash, err = jcs.SHA256(hashes); err != nil {
		return nil, fmt.Errorf("hash tools: %w", err)
	}
	return d, nil
}

// toolStatus records one tool definition with its hash and derived class.
func toolStatus(t *sdk.Tool) (resource.MCPToolStatus, error) {
	ts := resource.MCPToolStatus{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if ts.InputSchema, err = asMap(t.InputSchema); err != nil {
		return ts, fmt.Errorf("tool %s: inputSchema: %w", t.Name, err)
	}
	if ts.OutputSchema, err = asMap(t.OutputSchema); err != nil {
		return ts, fmt.Errorf("tool %s: outputSchema: %w", t.Name, err)
	}
	if t.Annotations != nil {
		if ts.Annotations, err = asMap(t.Annotations); err != nil {
			return ts, fmt.Errorf("tool %s: annotations: %w", t.Name, err)
		}
	}
	def := map[string]any{"name": ts.Name, "title": ts.Title, "description": ts.Description,
		"inputSchema": ts.InputSchema, "outputSchema": ts.OutputSchema, "annotations": ts.Annotations}
	if ts.Hash, err = jcs.SHA256(def); err != nil {
		return ts, fmt.Errorf("tool %s: hash: %w", t.Name, err)
	}
	ts.SideEffect = resource.MCPSideEffect(ts.Annotations)
	// The definition reaches the model as instructions: scan it as the
	// gateway scans results.
	_, rep := scan.Apply(map[string]any{"name": ts.Name, "title": ts.Title, "description": ts.Description,
		"inputSchema": ts.InputSchema, "outputSchema": ts.OutputSchema}, scan.Options{Injection: scan.ModeBlock})
	for _, f := range rep.Injections {
		ts.Findings = append(ts.Findings, resource.MCPFinding{Path: f.Path, Kind: string(f.Kind), Severity: string(f.Severity)})
	}
	ts.Blocked = rep.Blocked
	return ts, nil
}

// asMap turns a JSON value of the SDK into a generic object; nil stays nil.
func asMap(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// merge folds a discovery into the stored status: the new definitions, the
// scan policy, and the comparison with the pin. It returns the quarantine
// it set, if any.
func (s *Service) merge(st *resource.MCPServerStatus, obj *resource.Object, d *discovered, now time.Time) *resource.MCPQuarantine {
	prev := *st
	n := d.status
	st.Error = ""
	st.Server, st.ProtocolVersion, st.Transport = n.Server, n.ProtocolVersion, n.Transport
	st.Tools, st.Prompts, st.Resources, st.ToolsHash = n.Tools, n.Prompts, n.Resources, n.ToolsHash
	st.DiscoveredAt = timestamp(now)
	var q *resource.MCPQuarantine
	setQuarantine := func(reason string) {
		if st.Quarantine == nil {
			q = &resource.MCPQuarantine{Reason: reason, By: systemActor, At: timestamp(now)}
			st.Quarantine = q
		}
	}

	policy := obj.Metadata.Annotations[AnnotationScan]
	if policy == "" {
		policy = ScanBlock
	}
	var flagged []string
	for i := range st.Tools {
		t := &st.Tools[i]
		if t.Blocked {
			flagged = append(flagged, t.Name)
		}
		if policy != ScanBlock {
			t.Blocked = false
		}
	}
	if len(flagged) > 0 && policy == ScanQuarantine {
		setQuarantine(fmt.Sprintf("the definitions of tools %s carry prompt-injection patterns", strings.Join(flagged, ", ")))
	}

	version := ""
	if n.Server != nil {
		version = n.Server.Version
	}
	pinned, _ := obj.Spec["pinnedVersion"].(string)
	if pinned == "" {
		st.Drift = nil
		return q
	}
	pv, ph := resource.ParseMCPPin(pinned)
	baseline := map[string]string{}
	switch {
	case st.Pin != nil && st.Pin.Version == pv && (ph == "" || st.Pin.ToolsHash == ph):
		baseline = st.Pin.Tools
		if ph == "" {
			ph = st.Pin.ToolsHash
		}
	case prev.ToolsHash != "" && prev.ToolsHash == ph:
		for _, t := range prev.Tools {
			baseline[t.Name] = t.Hash
		}
	}
	if ph == "" && pv == version {
		// A version pinned in the spec without a hash: the first
		// discovery of that version is the baseline (trust on first use).
		st.Pin = &resource.MCPPin{Version: pv, ToolsHash: n.ToolsHash, Tools: toolHashes(n.Tools), PinnedAt: timestamp(now), PinnedBy: systemActor}
		st.Drift = nil
		return q
	}
	if pv == version && ph == n.ToolsHash {
		st.Drift = nil
		return q
	}
	drift := &resource.MCPDrift{DetectedAt: timestamp(now), PinnedVersion: pv, Version: version, PinnedToolsHash: ph, ToolsHash: n.ToolsHash}
	if ph != n.ToolsHash && len(baseline) > 0 {
		now := toolHashes(n.Tools)
		for name, old := range baseline {
			switch h, ok := now[name]; {
			case !ok:
				drift.Changes = append(drift.Changes, resource.MCPToolChange{Tool: name, Change: "removed", OldHash: old})
			case h != old:
				drift.Changes = append(drift.Changes, resource.MCPToolChange{Tool: name, Change: "changed", OldHash: old, NewHash: h})
			}
		}
		for name, h := range now {
			if _, ok := baseline[name]; !ok {
				drift.Changes = append(drift.Changes, resource.MCPToolChange{Tool: name, Change: "added", NewHash: h})
			}
		}
		slices.SortFunc(drift.Changes, func(a, b resource.MCPToolChange) int { return strings.Compare(a.Tool, b.Tool) })
	}
	st.Drift = drift
	setQuarantine(driftReason(drift))
	return q
}

// driftReason says in one line what moved.
func driftReason(d *resource.MCPDrift) string {
	var parts []string
	if d.PinnedVersion != d.Version {
		parts = append(parts, fmt.Sprintf("version %q is not the pinned %q", d.Version, d.PinnedVersion))
	}
	for _, c := range d.Changes {
		switch c.Change {
		case "changed":
			parts = append(parts, fmt.Sprintf("tool %s changed (%s → %s)", c.Tool, c.OldHash, c.NewHash))
		case "added":
			parts = append(parts, fmt.Sprintf("tool %s added (%s)", c.Tool, c.NewHash))
		case "removed":
			parts = append(parts, fmt.Sprintf("tool %s removed (was %s)", c.Tool, c.OldHash))
		}
	}
	if len(d.Changes) == 0 && d.PinnedToolsHash != "" && d.PinnedToolsHash != d.ToolsHash {
		parts = append(parts, fmt.Sprintf("tool definitions changed (%s → %s)", d.PinnedToolsHash, d.ToolsHash))
	}
	return "drift from the pin: " + strings.Join(parts, "; ")
}

func toolHashes(tools []resource.MCPToolStatus) map[string]string {
	m := make(map[string]string, len(tools))
	for _, t := range tools {
		m[t.Name] = t.Hash
	}
	return m
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// forbidden maps an authorization refusal onto the API error.
func forbidden(err error) error {
	if errors.Is(err, auth.ErrForbidden) {
		return apierr.New(apierr.CodeForbidden, "%s", err.Error())
	}
	return err
}
