package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/notifications"
	"github.com/warden-dev/warden/web/approvals"
	"github.com/warden-dev/warden/web/fleet"
	"github.com/warden-dev/warden/web/toolcalls"
)

// consoleScreens serves the approver's screens, the tool-call explorer and
// the fleet pages. Every permission is asked of app/authz.
type consoleScreens struct{ s *Server }

var (
	_ approvals.Service = consoleScreens{}
	_ toolcalls.Service = consoleScreens{}
	_ fleet.Service     = consoleFleet{}
)

// namespaces returns the tenant's namespaces where p may verb object.
func (cs consoleScreens) namespaces(ctx context.Context, p auth.Principal, verb, object string) ([]string, error) {
	var all []*resource.Object
	err := cs.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		all, err = store.ListAll(ctx, r, resource.KindNamespace, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		err := cs.s.authz.Authorize(ctx, p, verb, n.Metadata.Name, object)
		switch {
		case err == nil:
			out = append(out, n.Metadata.Name)
		case !errors.Is(err, auth.ErrForbidden):
			return nil, err
		}
	}
	return out, nil
}

func (cs consoleScreens) may(ctx context.Context, p auth.Principal, verb, ns, object string) (bool, error) {
	err := cs.s.authz.Authorize(ctx, p, verb, ns, object)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, auth.ErrForbidden):
		return false, nil
	}
	return false, err
}

// listIn lists kind with sel in the namespaces ns, newest first.
func (cs consoleScreens) listIn(ctx context.Context, tenant, kind string, sel *resource.Selector, ns []string) ([]*resource.Object, error) {
	allowed := map[string]bool{}
	for _, n := range ns {
		allowed[n] = true
	}
	var out []*resource.Object
	err := cs.s.store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		all, err := store.ListAll(ctx, r, kind, sel)
		for _, o := range all {
			if allowed[o.Metadata.Namespace] {
				out = append(out, o)
			}
		}
		return err
	})
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Metadata.CreationTimestamp, out[j].Metadata.CreationTimestamp
		if a != b {
			return a > b
		}
		return out[i].Metadata.Name > out[j].Metadata.Name
	})
	return out, err
}

func record(tenant string, ap *resource.Object) (approvals.Record, error) {
	a, err := notifications.ApprovalOf(tenant, ap)
	if err != nil {
		return approvals.Record{}, err
	}
	str := func(k string) string { s, _ := ap.Status[k].(string); return s }
	created, _ := time.Parse(time.RFC3339, ap.Metadata.CreationTimestamp)
	return approvals.Record{Approval: a, Created: created, Status: str("status"), DecidedBy: str("decidedBy"),
		DecidedAt: str("decidedAt"), Rationale: str("rationale"), Channel: str("channel")}, nil
}

// Inbox lists the pending approvals of the namespaces where p may decide.
func (cs consoleScreens) Inbox(ctx context.Context, p auth.Principal) ([]approvals.Record, error) {
	ns, err := cs.namespaces(ctx, p, authz.VerbCreate, authz.ObjApprovalsDecide)
	if err != nil || len(ns) == 0 {
		return nil, err
	}
	sel, err := resource.ParseSelector("status.status=" + gateway.ApprovalPending)
	if err != nil {
		return nil, err
	}
	aps, err := cs.listIn(ctx, p.Tenant, resource.KindApproval, sel, ns)
	if err != nil {
		return nil, err
	}
	out := make([]approvals.Record, 0, len(aps))
	for _, ap := range aps {
		r, err := record(p.Tenant, ap)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Approval reads one approval for its page.
func (cs consoleScreens) Approval(ctx context.Context, p auth.Principal, ns, name string) (approvals.Page, error) {
	var pg approvals.Page
	if err := cs.s.checkPrincipal(ctx, p, auth.VerbGet, ns, "approvals"); err != nil {
		return pg, err
	}
	err := cs.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		ap, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return notFound("approval %q not found in namespace %q", name, ns)
		}
		if err != nil {
			return err
		}
		if pg.Record, err = record(p.Tenant, ap); err != nil {
			return err
		}
		if call := pg.Record.Approval.ToolCall; call != "" {
			if tc, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: call}); err == nil {
				pg.Record.Phase, _ = tc.Status["phase"].(string)
			}
		}
		ds, err := store.DeliveryList(ctx, r, ns, name)
		if err != nil {
			return err
		}
		for _, d := range ds {
			pg.Deliveries = append(pg.Deliveries, approvals.DeliveryRow{Time: d.Time.UTC().Format("2006-01-02 15:04:05"), Channel: d.Channel,
				Type: d.Type, Recipient: d.Recipient, Attempt: d.Attempt, Outcome: d.Outcome, Error: d.Error})
		}
		return nil
	})
	if err != nil {
		return pg, err
	}
	if pg.CanDecide, err = cs.may(ctx, p, authz.VerbCreate, ns, authz.ObjApprovalsDecide); err != nil {
		return pg, err
	}
	if pg.CanOverride, err = cs.may(ctx, p, authz.VerbCreate, ns, authz.ObjApprovalsOverride); err != nil {
		return pg, err
	}
	if agent := pg.Record.Approval.Agent; agent != "" {
		if ok, _ := cs.may(ctx, p, auth.VerbList, ns, "toolcalls"); ok {
			sel, err := resource.ParseSelector("warden.dev/agent=" + agent)
			if err == nil {
				calls, err := cs.listIn(ctx, p.Tenant, resource.KindToolCall, sel, []string{ns})
				if err != nil {
					return pg, err
				}
				for _, tc := range calls[:min(len(calls), 10)] {
					pg.Recent = append(pg.Recent, callRow(tc).CallRow())
				}
			}
		}
	}
	return pg, nil
}

// Decide decides through the gateway, as the API does, with channel console.
func (cs consoleScreens) Decide(ctx context.Context, p auth.Principal, ns, name, decision, rationale string, override bool) error {
	if cs.s.gateway == nil {
		return apierr.New(apierr.CodeUnavailable, "the tool gateway is not running")
	}
	_, err := cs.s.gateway.Decide(ctx, p, ns, name, api.DecideRequest{Decision: decision, Rationale: rationale, Channel: gateway.ChannelConsole}, override)
	if err == nil {
		// The gateway wrote the decision's audit record, with its rationale.
		if act, ok := ctx.Value(consoleActionKey{}).(*consoleAction); ok {
			act.recorded = true
		}
	}
	return err
}

type callRowT toolcalls.Row

func (r callRowT) CallRow() approvals.CallRow {
	return approvals.CallRow{Namespace: r.Namespace, Name: r.Name, Tool: r.Tool, Phase: r.Phase, Created: r.Created}
}

func callRow(tc *resource.Object) callRowT {
	spec := tc.Spec
	side, _ := spec["sideEffects"].(map[string]any)
	phase, _ := tc.Status["phase"].(string)
	level, _ := side["level"].(string)
	created := strings.Replace(strings.TrimSuffix(tc.Metadata.CreationTimestamp, "Z"), "T", " ", 1)
	return callRowT{Namespace: tc.Metadata.Namespace, Name: tc.Metadata.Name, Agent: tc.Metadata.Labels["warden.dev/agent"],
		Tool: tc.Metadata.Labels["warden.dev/tool"], SideEffect: level, Phase: phase, Created: created}
}

// List lists the calls p may read that match f, newest first.
func (cs consoleScreens) List(ctx context.Context, p auth.Principal, f toolcalls.Filter) ([]toolcalls.Row, error) {
	var parts []string
	for _, kv := range [][2]string{{"warden.dev/agent", f.Agent}, {"warden.dev/tool", f.Tool}, {"status.phase", f.Phase}} {
		if kv[1] == "" {
			continue
		}
		if strings.ContainsAny(kv[1], ",=!() ") {
			return nil, badRequest("filter %q must be a plain name", kv[1])
		}
		parts = append(parts, kv[0]+"="+kv[1])
	}
	sel, err := resource.ParseSelector(strings.Join(parts, ","))
	if err != nil {
		return nil, badRequest("invalid filter: %s", err.Error())
	}
	var since time.Time
	if f.Since != "" {
		if d, err := time.ParseDuration(f.Since); err == nil && d > 0 {
			since = cs.s.now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, f.Since); err == nil {
			since = t
		} else {
			return nil, badRequest("since must be a duration such as 1h or an RFC 3339 time, not %q", f.Since)
		}
	}
	ns, err := cs.namespaces(ctx, p, auth.VerbList, "toolcalls")
	if err != nil || len(ns) == 0 {
		return nil, err
	}
	calls, err := cs.listIn(ctx, p.Tenant, resource.KindToolCall, sel, ns)
	if err != nil {
		return nil, err
	}
	var out []toolcalls.Row
	for _, tc := range calls {
		if !since.IsZero() && createdBefore(tc, since) {
			continue
		}
		out = append(out, toolcalls.Row(callRow(tc)))
		if len(out) == 200 {
			break
		}
	}
	return out, nil
}

func indent(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Get reads one call with its audit records and its approval's.
func (cs consoleScreens) Get(ctx context.Context, p auth.Principal, ns, name string) (toolcalls.Call, error) {
	var c toolcalls.Call
	if err := cs.s.checkPrincipal(ctx, p, auth.VerbGet, ns, "toolcalls"); err != nil {
		return c, err
	}
	err := cs.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		tc, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return notFound("tool call %q not found in namespace %q", name, ns)
		}
		if err != nil {
			return err
		}
		c.Row = toolcalls.Row(callRow(tc))
		side, _ := tc.Spec["sideEffects"].(map[string]any)
		c.IdempotencyKey, _ = side["idempotencyKey"].(string)
		ap, _ := tc.Spec["approval"].(map[string]any)
		c.ApprovalStatus, _ = ap["status"].(string)
		c.ApprovedBy, _ = ap["approvedBy"].(string)
		if req, _ := ap["required"].(bool); req {
			c.Approval = gateway.ApprovalName(name)
		}
		c.Environment = tc.Metadata.Annotations[gateway.AnnotationEnvironment]
		c.TraceID = tc.Metadata.Annotations[gateway.AnnotationTraceID]
		c.Input, c.Output = indent(tc.Spec["input"]), indent(tc.Status["output"])
		c.StartedAt, _ = tc.Status["startedAt"].(string)
		c.CompletedAt, _ = tc.Status["completedAt"].(string)
		c.Steps = toolcalls.NewSteps(tc.Status["steps"])
		since := time.Time{}
		if t, err := time.Parse(time.RFC3339, tc.Metadata.CreationTimestamp); err == nil {
			since = t.Add(-time.Second)
		}
		recs, err := r.AuditList(ctx, store.AuditListParams{Namespace: ns, Since: since, Limit: 1000})
		if err != nil {
			return err
		}
		for _, a := range recs {
			if a.Resource == "ToolCall/"+name || (c.Approval != "" && a.Resource == "Approval/"+c.Approval) {
				c.Audit = append(c.Audit, toolcalls.AuditRow{Time: a.Time.UTC().Format("2006-01-02 15:04:05"), Actor: a.Actor,
					Verb: a.Verb, Outcome: a.Outcome, Reason: a.Reason})
			}
		}
		return nil
	})
	return c, err
}

// fleetKinds maps the fleet's path segments to kinds.
var fleetKinds = map[string]string{"agents": resource.KindAgent, "tools": resource.KindTool, "policies": resource.KindPolicy, "models": resource.KindModel}

// fleetList lists one kind of the fleet.
func (cs consoleScreens) fleetList(ctx context.Context, p auth.Principal, plural string) ([]fleet.Item, error) {
	kind, ok := fleetKinds[plural]
	if !ok {
		return nil, notFound("no fleet page %q", plural)
	}
	ns, err := cs.namespaces(ctx, p, auth.VerbList, plural)
	if err != nil || len(ns) == 0 {
		return nil, err
	}
	objs, err := cs.listIn(ctx, p.Tenant, kind, nil, ns)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if objs[i].Metadata.Namespace != objs[j].Metadata.Namespace {
			return objs[i].Metadata.Namespace < objs[j].Metadata.Namespace
		}
		return objs[i].Metadata.Name < objs[j].Metadata.Name
	})
	out := make([]fleet.Item, 0, len(objs))
	for _, o := range objs {
		out = append(out, fleet.Item{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Summary: summary(o),
			Created: strings.Replace(strings.TrimSuffix(o.Metadata.CreationTimestamp, "Z"), "T", " ", 1)})
	}
	return out, nil
}

// summary says what a fleet resource is in a few words.
func summary(o *resource.Object) string {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch o.Kind {
	case resource.KindAgent:
		route, _ := o.Spec["modelRoute"].(map[string]any)
		tools, _ := o.Spec["tools"].([]any)
		return fmt.Sprintf("model %s, %d tools", str(route, "primary"), len(tools))
	case resource.KindTool:
		return str(o.Spec, "sideEffect") + ", " + str(o.Spec, "source")
	case resource.KindPolicy:
		rules, _ := o.Spec["rules"].([]any)
		return fmt.Sprintf("version %s, %d rules", str(o.Spec, "version"), len(rules))
	case resource.KindModel:
		return str(o.Spec, "provider") + " " + str(o.Spec, "model")
	case resource.KindDeployment:
		return "environment " + str(o.Spec, "environment")
	}
	return ""
}

// fleetGet reads one fleet resource; an agent comes with its compiled
// manifest and deployments.
func (cs consoleScreens) fleetGet(ctx context.Context, p auth.Principal, plural, ns, name string) (fleet.Detail, error) {
	d := fleet.Detail{Plural: plural, Namespace: ns, Name: name}
	kind, ok := fleetKinds[plural]
	if !ok {
		return d, notFound("no fleet page %q", plural)
	}
	if err := cs.s.checkPrincipal(ctx, p, auth.VerbGet, ns, plural); err != nil {
		return d, err
	}
	err := cs.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		o, err := r.ResourceGet(ctx, resource.Key{Kind: kind, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return notFound("%s %q not found in namespace %q", kind, name, ns)
		}
		if err != nil {
			return err
		}
		o = present(o)
		d.Spec = indent(o.Spec)
		if len(o.Status) > 0 {
			d.Status = indent(o.Status)
		}
		if kind != resource.KindAgent {
			return nil
		}
		if m, _ := o.Status["compiledManifest"].(string); m != "" {
			if cm, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindCompiledAgentManifest, Namespace: ns, Name: m}); err == nil {
				d.Manifest = indent(cm.Spec)
			}
		}
		deps, err := store.ListAll(ctx, r, resource.KindDeployment, nil)
		if err != nil {
			return err
		}
		for _, dep := range deps {
			ref, _ := dep.Spec["agentRef"].(map[string]any)
			if dep.Metadata.Namespace == ns && ref["name"] == name {
				d.Deployments = append(d.Deployments, fleet.Item{Namespace: ns, Name: dep.Metadata.Name, Summary: summary(dep)})
			}
		}
		return nil
	})
	return d, err
}

// consoleFleet adapts fleetList and fleetGet to fleet.Service (whose
// List and Get would clash with the explorer's).
type consoleFleet struct{ cs consoleScreens }

func (f consoleFleet) List(ctx context.Context, p auth.Principal, plural string) ([]fleet.Item, error) {
	return f.cs.fleetList(ctx, p, plural)
}

func (f consoleFleet) Get(ctx context.Context, p auth.Principal, plural, ns, name string) (fleet.Detail, error) {
	return f.cs.fleetGet(ctx, p, plural, ns, name)
}

// menu says which console screens p may use.
func (cs consoleScreens) menu(ctx context.Context, p auth.Principal) map[string]bool {
	out := map[string]bool{}
	anyNS := func(verb, object string) bool {
		ns, err := cs.namespaces(ctx, p, verb, object)
		return err == nil && len(ns) > 0
	}
	out["approvals"] = anyNS(authz.VerbCreate, authz.ObjApprovalsDecide)
	out["toolcalls"] = anyNS(auth.VerbList, "toolcalls")
	out["fleet"] = anyNS(auth.VerbList, "agents")
	out["namespaces"] = anyNS(auth.VerbList, "agents")
	out["members"], _ = cs.may(ctx, p, auth.VerbList, "", authz.ObjMembers)
	out["apikeys"] = anyNS(auth.VerbList, authz.ObjAPIKeys)
	out["audit"], _ = cs.may(ctx, p, auth.VerbList, "", authz.ObjAudit)
	return out
}

// watchApprovals calls changed on every change of an Approval of tenant,
// from the watch hub, until ctx ends: the console's inbox stream follows
// it.
func (s *Server) watchApprovals(ctx context.Context, tenant string, changed func()) error {
	sel, err := resource.ParseSelector("kind=" + resource.KindApproval)
	if err != nil {
		return err
	}
	return s.hub.Watch(ctx, tenant, sel, "", func(ev api.WatchEvent) error {
		if ev.Type != api.EventBookmark {
			changed()
		}
		return nil
	})
}
