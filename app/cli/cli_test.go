package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/resource"
)

// fakeServer implements the control plane contract of docs/api.md just far
// enough to exercise the CLI's parsing and rendering. It is not the real
// server: the end-to-end tests of app/server cover that.
type fakeServer struct {
	mu      sync.Mutex
	objects map[resource.Key]*resource.Object
	rv      int
	// pageSize forces small pages so that get must follow continue tokens.
	pageSize int
}

const testToken = "wk_test"

var sideEffects = []string{"read_only", "local_write", "external_write", "financial", "communication", "code_execution", "privileged"}

func newFakeServer(seed ...*resource.Object) *fakeServer {
	f := &fakeServer{objects: map[resource.Key]*resource.Object{}, pageSize: 2}
	for _, o := range seed {
		f.rv++
		o.Metadata.ResourceVersion = strconv.Itoa(f.rv)
		o.Metadata.CreationTimestamp = "2026-01-01T00:00:00Z"
		f.objects[o.Key()] = o
	}
	return f
}

func obj(kind, ns, name string, spec map[string]any, labels map[string]string) *resource.Object {
	k, _ := resource.LookupKind(kind)
	return &resource.Object{APIVersion: k.APIVersion, Kind: kind, Metadata: resource.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Generation: 1}, Spec: spec}
}

func fail(w http.ResponseWriter, status int, e *apierr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apierr.Body{Error: e})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		fail(w, 401, apierr.New(apierr.CodeUnauthenticated, "missing or invalid credential"))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	switch {
	case r.Method == "POST" && len(parts) == 2 && parts[0] == "resources":
		f.bulk(w, r, parts[1])
	case r.Method == "GET" && r.URL.Path == "/v1/resources":
		f.watch(w, r)
	case r.Method == "GET" && len(parts) == 1 && parts[0] == "namespaces":
		reply(w, api.List{Kind: "NamespaceList", Items: []*resource.Object{
			obj("Namespace", "", "default", nil, nil), obj("Namespace", "", "team-a", nil, nil),
		}, Metadata: api.ListMeta{ResourceVersion: strconv.Itoa(f.rv)}})
	case len(parts) == 3 && parts[0] == "namespaces" && r.Method == "GET":
		f.list(w, r, parts[1], parts[2])
	case len(parts) == 4 && parts[0] == "namespaces":
		k, _ := resource.LookupPath(parts[2])
		key := resource.Key{Kind: k.Kind, Namespace: parts[1], Name: parts[3]}
		if parts[3] == "locked" {
			fail(w, 409, apierr.New(apierr.CodeConflict, "%s was modified concurrently", key))
			return
		}
		if k.SystemOnly && r.Method != "GET" {
			fail(w, 403, apierr.New(apierr.CodeForbidden, "%s is written by the system only", k.Plural))
			return
		}
		o, ok := f.objects[key]
		if !ok {
			fail(w, 404, apierr.New(apierr.CodeNotFound, "%s not found", key))
			return
		}
		if r.Method == "DELETE" {
			delete(f.objects, key)
		}
		reply(w, o)
	default:
		fail(w, 404, apierr.New(apierr.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	}
}

func (f *fakeServer) bulk(w http.ResponseWriter, r *http.Request, verb string) {
	body, _ := io.ReadAll(r.Body)
	var docs []*resource.Object
	var diags []api.Diagnostic
	for i, d := range strings.Split(string(body), "---\n") {
		var o resource.Object
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			diags = append(diags, api.Diagnostic{Document: i, Code: "Invalid", Message: err.Error()})
			continue
		}
		if o.Metadata.Namespace == "" {
			o.Metadata.Namespace = "default"
		}
		if o.Kind == "Tool" {
			if se, _ := o.Spec["sideEffect"].(string); !contains(sideEffects, se) {
				diags = append(diags, api.Diagnostic{Document: i, Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name,
					Path: "spec.sideEffect", Code: "NotSupported", Message: fmt.Sprintf("%q is not a side-effect class", se)})
			}
		}
		if o.Kind == "Deployment" && o.Spec["environment"] == "prod" {
			diags = append(diags, api.Diagnostic{Document: i, Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name,
				Code: "PolicyDenied", Message: "financial tools need approval in prod", Policy: "prod-guard@1"})
		}
		docs = append(docs, &o)
	}
	if len(diags) > 0 {
		fail(w, 422, apierr.New(apierr.CodeAdmissionRejected, "%d problem(s)", len(diags)).WithDetails(map[string]any{"diagnostics": diags}))
		return
	}
	switch verb {
	case "validate":
		res := api.ValidationResult{Kind: "ValidationResult", Valid: true}
		for _, o := range docs {
			res.Items = append(res.Items, api.ApplyItem{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name})
		}
		reply(w, res)
	case "diff":
		res := api.DiffResult{Kind: "DiffResult"}
		for _, o := range docs {
			it := api.DiffItem{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Action: api.DiffUnchanged}
			cur, ok := f.objects[o.Key()]
			switch {
			case !ok:
				it.Action = api.DiffCreate
			case !reflect.DeepEqual(cur.Spec, o.Spec):
				it.Action = api.DiffUpdate
				for k, v := range o.Spec {
					if old, had := cur.Spec[k]; !had {
						it.Changes = append(it.Changes, resource.FieldChange{Path: "spec." + k, Op: "add", New: v})
					} else if !reflect.DeepEqual(old, v) {
						it.Changes = append(it.Changes, resource.FieldChange{Path: "spec." + k, Op: "replace", Old: old, New: v})
					}
				}
			}
			res.Items = append(res.Items, it)
		}
		reply(w, res)
	default:
		res := api.ApplyResult{APIVersion: resource.GroupVersion, Kind: "ApplyResult"}
		for _, o := range docs {
			f.rv++
			action := api.ActionCreated
			if cur, ok := f.objects[o.Key()]; ok {
				action = api.ActionConfigured
				o.Metadata.Generation = cur.Metadata.Generation + 1
			} else {
				o.Metadata.Generation = 1
			}
			o.Metadata.ResourceVersion = strconv.Itoa(f.rv)
			f.objects[o.Key()] = o
			res.Items = append(res.Items, api.ApplyItem{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name,
				Action: action, ResourceVersion: o.Metadata.ResourceVersion, Generation: o.Metadata.Generation})
			if o.Kind == "Agent" {
				res.Manifests = append(res.Manifests, fmt.Sprintf("%s-g%d", o.Metadata.Name, o.Metadata.Generation))
			}
		}
		reply(w, res)
	}
}

func (f *fakeServer) list(w http.ResponseWriter, r *http.Request, ns, plural string) {
	k, ok := resource.LookupPath(plural)
	if !ok || k.Plural != plural {
		fail(w, 404, apierr.New(apierr.CodeNotFound, "unknown kind %s", plural))
		return
	}
	sel, err := resource.ParseSelector(r.URL.Query().Get("labelSelector"))
	if err != nil {
		fail(w, 400, apierr.New(apierr.CodeInvalidRequest, "%v", err))
		return
	}
	var items []*resource.Object
	for _, o := range f.objects {
		if o.Kind == k.Kind && o.Metadata.Namespace == ns && sel.Matches(o) {
			items = append(items, o)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Metadata.Name < items[j].Metadata.Name })
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	end := min(start+f.pageSize, len(items))
	l := api.List{APIVersion: k.APIVersion, Kind: k.Kind + "List", Items: items[start:end]}
	l.Metadata.ResourceVersion = strconv.Itoa(f.rv)
	if end < len(items) {
		l.Metadata.Continue = strconv.Itoa(end)
	}
	if l.Items == nil {
		l.Items = []*resource.Object{}
	}
	reply(w, l)
}

func (f *fakeServer) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		fail(w, 400, apierr.New(apierr.CodeInvalidRequest, "watch=true required"))
		return
	}
	if q.Get("resourceVersion") == "" {
		fail(w, 400, apierr.New(apierr.CodeInvalidRequest, "the CLI must resume from the list's resourceVersion"))
		return
	}
	sel, err := resource.ParseSelector(q.Get("selector"))
	if err != nil {
		fail(w, 400, apierr.New(apierr.CodeInvalidRequest, "%v", err))
		return
	}
	changed := obj("Agent", "default", "support-bot", map[string]any{"modelRoute": map[string]any{"primary": "claude"}}, map[string]string{"team": "support"})
	changed.Metadata.CreationTimestamp = "2026-01-01T00:00:00Z"
	enc := json.NewEncoder(w)
	for _, ev := range []api.WatchEvent{
		{Type: api.EventBookmark, Object: &resource.Object{Metadata: resource.ObjectMeta{ResourceVersion: "99"}}},
		{Type: api.EventModified, Object: changed},
		{Type: api.EventDeleted, Object: obj("Tool", "default", "zendesk.reply", nil, nil)},
	} {
		if ev.Type == api.EventBookmark || sel.Matches(ev.Object) {
			_ = enc.Encode(ev)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func seed() []*resource.Object {
	return []*resource.Object{
		obj("Agent", "default", "support-bot", map[string]any{
			"modelRoute": map[string]any{"primary": "gpt-4o", "fallback": []any{"claude"}},
			"tools":      []any{map[string]any{"name": "zendesk.search"}, map[string]any{"name": "zendesk.reply"}},
			"framework":  map[string]any{"adapter": "langgraph"},
		}, map[string]string{"team": "support"}),
		obj("Agent", "default", "billing-bot", map[string]any{"modelRoute": map[string]any{"primary": "gpt-4o-mini"}}, map[string]string{"team": "billing"}),
		obj("Agent", "default", "triage-bot", map[string]any{"modelRoute": map[string]any{"primary": "claude"}}, nil),
		obj("Agent", "team-a", "team-bot", map[string]any{"modelRoute": map[string]any{"primary": "gpt-4o"}}, nil),
		obj("Tool", "default", "zendesk.reply", map[string]any{"sideEffect": "communication", "source": "rest", "requiresApproval": true}, nil),
		obj("Tool", "default", "zendesk.search", map[string]any{"sideEffect": "read_only", "source": "rest", "requiresApproval": false}, nil),
		obj("Model", "default", "gpt-4o", map[string]any{"provider": "openai", "model": "gpt-4o"}, nil),
		obj("CompiledAgentManifest", "default", "support-bot-g1", map[string]any{
			"agent": map[string]any{"name": "support-bot", "generation": 1}, "modelRoute": map[string]any{"primary": "openai:gpt-4o"},
		}, nil),
	}
}

const (
	agentYAML = `apiVersion: warden.dev/v1alpha1
kind: Agent
metadata:
  name: support-bot
  labels:
    team: support
spec:
  framework:
    adapter: langgraph
  modelRoute:
    primary: %s
    fallback: [claude]
  tools:
  - name: zendesk.search
  - name: zendesk.reply
`
	toolsYAML = `# Tools of the support desk.
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata:
  name: zendesk.search
spec:
  sideEffect: read_only
  source: rest
  requiresApproval: false
--- # the reply tool
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata:
  name: zendesk.reply
spec:
  sideEffect: %s
  source: rest
  requiresApproval: true
`
	modelJSON = `{"apiVersion":"warden.dev/v1alpha1","kind":"Model","metadata":{"name":"gpt-4o"},"spec":{"provider":"openai","model":"gpt-4o"}}`
	prodYAML  = `apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata:
  name: support-bot-prod
spec:
  agentRef: {name: support-bot}
  environment: prod
`
)

// fixture is one test's world: a fake server, a WARDEN_HOME whose config
// points at it, and a manifests directory.
type fixture struct {
	server *httptest.Server
	home   string
	dir    string
}

func setup(t *testing.T, objs ...*resource.Object) *fixture {
	t.Helper()
	srv := httptest.NewServer(newFakeServer(objs...))
	t.Cleanup(srv.Close)
	fx := &fixture{server: srv, home: t.TempDir(), dir: t.TempDir()}
	cfg := clientconfig.New()
	cfg.SetContext(clientconfig.Context{Name: "local", Server: srv.URL, Token: testToken, Namespace: "default"})
	require.NoError(t, cfg.UseContext("local"))
	require.NoError(t, clientconfig.Save(fx.home, cfg))

	write := func(name, content string) {
		p := filepath.Join(fx.dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("fleet/agent.yaml", fmt.Sprintf(agentYAML, "gpt-4o"))
	write("fleet/model.json", modelJSON)
	write("fleet/tools.yml", fmt.Sprintf(toolsYAML, "communication"))
	write("fleet/README.txt", "not a manifest")
	write("fleet/extra/deploy-prod.yaml", prodYAML)
	write("bad/tools.yaml", fmt.Sprintf(toolsYAML, "sends_email"))
	write("changed/agent.yaml", fmt.Sprintf(agentYAML, "claude-sonnet"))
	return fx
}

type result struct {
	code           int
	stdout, stderr string
}

func (fx *fixture) run(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	vars := map[string]string{clientconfig.EnvHome: fx.home}
	for k, v := range env {
		vars[k] = v
	}
	code := RunWith(t.Context(), Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errb,
		LookupEnv: func(k string) (string, bool) {
			v, ok := vars[k]
			return v, ok
		},
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC) },
	}, append([]string{"warden"}, args...))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name       string
		args       []string // "$DIR" is replaced by the fixture's manifests directory
		env        map[string]string
		stdin      string
		empty      bool // start with an empty store
		wantCode   int
		wantOut    []string
		wantErr    []string
		wantNotOut []string
	}{
		// apply
		{
			name: "apply a directory as one body", args: []string{"apply", "-f", "$DIR/fleet"}, empty: true,
			wantOut:    []string{"agent/support-bot created\n", "model/gpt-4o created\n", "tool/zendesk.search created\n", "tool/zendesk.reply created\n", "compiledagentmanifest support-bot-g1 compiled\n"},
			wantNotOut: []string{"deployment"},
		},
		{
			name: "apply from stdin", args: []string{"apply", "-f", "-"}, stdin: modelJSON,
			wantOut: []string{"model/gpt-4o configured\n"},
		},
		{
			name: "apply rejected names document, file and field", args: []string{"apply", "-f", "$DIR/bad/tools.yaml"},
			wantCode: ExitRejected,
			wantErr:  []string{"error: 1 problem(s) found; nothing was written", "error: document 2 (Tool zendesk.reply, $DIR/bad/tools.yaml #2): spec.sideEffect: NotSupported: \"sends_email\" is not a side-effect class"},
		},
		{
			name: "apply rejected by policy", args: []string{"apply", "-f", "$DIR/fleet/extra/deploy-prod.yaml"},
			wantCode: ExitRejected,
			wantErr:  []string{"document 1 (Deployment support-bot-prod, $DIR/fleet/extra/deploy-prod.yaml): PolicyDenied: financial tools need approval in prod [policy prod-guard@1]"},
		},
		{name: "apply without -f", args: []string{"apply"}, wantCode: ExitUsage, wantErr: []string{"no manifests given"}},
		{name: "apply missing file", args: []string{"apply", "-f", "$DIR/nope.yaml"}, wantCode: ExitFailure, wantErr: []string{"no such file"}},
		{name: "apply stray argument", args: []string{"apply", "x", "-f", "-"}, wantCode: ExitUsage},

		// validate
		{name: "validate ok", args: []string{"validate", "-f", "$DIR/fleet/tools.yml"}, wantOut: []string{"tool/zendesk.search valid", "tool/zendesk.reply valid"}},
		{name: "validate rejected", args: []string{"validate", "-f", "$DIR/bad"}, wantCode: ExitRejected, wantErr: []string{"spec.sideEffect: NotSupported"}},

		// diff
		{
			name: "diff with changes exits 1", args: []string{"diff", "-f", "$DIR/changed/agent.yaml", "-f", "$DIR/fleet/tools.yml"},
			wantCode: ExitFailure,
			wantOut:  []string{"~ agent/support-bot (update)\n", "    spec.modelRoute\n", "-       \"primary\": \"gpt-4o\"", "+       \"primary\": \"claude-sonnet\"", "0 to create, 1 to update, 2 unchanged"},
		},
		{name: "diff without changes exits 0", args: []string{"diff", "-f", "$DIR/fleet/tools.yml"}, wantOut: []string{"0 to create, 0 to update, 2 unchanged"}},
		{name: "diff of new resources", args: []string{"diff", "-f", "$DIR/fleet"}, empty: true, wantCode: ExitFailure, wantOut: []string{"+ agent/support-bot (create)", "4 to create"}},

		// get
		{
			name: "get agents pages through continue", args: []string{"get", "agents"},
			wantOut: []string{
				"NAME          MODEL         TOOLS   MANIFEST   AGE\n",
				"billing-bot   gpt-4o-mini   0       -          5m\n",
				"support-bot   gpt-4o        2       -          5m\n",
				"triage-bot    claude        0       -          5m\n",
			},
			wantNotOut: []string{"team-bot"},
		},
		{name: "get by singular kind and label selector", args: []string{"get", "agent", "-l", "team=support"}, wantOut: []string{"support-bot"}, wantNotOut: []string{"billing-bot", "triage-bot"}},
		{name: "get all namespaces", args: []string{"get", "Agent", "-A"}, wantOut: []string{"NAMESPACE   NAME", "team-a      team-bot", "default     triage-bot"}},
		{name: "get other namespace", args: []string{"get", "agents", "-n", "team-a"}, wantOut: []string{"team-bot"}, wantNotOut: []string{"support-bot"}},
		{name: "get namespace from env", args: []string{"get", "agents"}, env: map[string]string{"WARDEN_NAMESPACE": "team-a"}, wantOut: []string{"team-bot"}},
		{
			name: "get tools columns", args: []string{"get", "tools"},
			wantOut: []string{"NAME             SIDE-EFFECT     SOURCE   APPROVAL   AGE", "zendesk.reply    communication   rest     required   5m", "zendesk.search   read_only       rest     no"},
		},
		{name: "get tools wide", args: []string{"get", "tools", "-o", "wide"}, wantOut: []string{"COST-PER-CALL", "DESCRIPTION", "LABELS", "zendesk.search   read_only"}},
		{name: "get models", args: []string{"get", "models"}, wantOut: []string{"NAME     PROVIDER   MODEL    AGE", "gpt-4o   openai     gpt-4o   5m"}},
		{name: "get manifests", args: []string{"get", "compiledagentmanifests"}, wantOut: []string{"AGENT", "support-bot-g1   support-bot   1            openai:gpt-4o"}},
		{name: "get list as json", args: []string{"get", "agents", "-o", "json"}, wantOut: []string{`"kind": "AgentList"`, `"name": "triage-bot"`}},
		{name: "get one as yaml", args: []string{"get", "compiledagentmanifest", "support-bot-g1", "-o", "yaml"}, wantOut: []string{"apiVersion: internal.warden.dev/v1\n", "kind: CompiledAgentManifest\n", "  name: support-bot-g1\n", "    primary: openai:gpt-4o\n"}},
		{name: "get one as table", args: []string{"get", "agent", "support-bot"}, wantOut: []string{"support-bot   gpt-4o"}},
		{name: "get empty", args: []string{"get", "policies"}, wantErr: []string{"No policies found in namespace default."}},
		{name: "get not found", args: []string{"get", "agent", "nope"}, wantCode: ExitNotFound, wantErr: []string{"error: NotFound: Agent/default/nope not found"}},
		{name: "get unknown kind", args: []string{"get", "widgets"}, wantCode: ExitUsage, wantErr: []string{`unknown resource kind "widgets"`}},
		{name: "get bad output", args: []string{"get", "agents", "-o", "xml"}, wantCode: ExitUsage, wantErr: []string{"unknown output format"}},
		{name: "get name with selector", args: []string{"get", "agents", "x", "-l", "a=b"}, wantCode: ExitUsage},
		{
			name: "get watch", args: []string{"get", "agents", "--watch"},
			wantOut:    []string{"EVENT      NAME          MODEL", "ADDED      billing-bot", "MODIFIED   support-bot   claude        0       -          5m\n"},
			wantNotOut: []string{"zendesk", "BOOKMARK"},
		},
		{name: "get watch json", args: []string{"get", "agents", "-w", "-o", "json"}, wantOut: []string{`"type": "ADDED"`, `"type": "MODIFIED"`}},

		// describe
		{
			name: "describe", args: []string{"describe", "agent", "support-bot"},
			wantOut: []string{"Name:             support-bot\n", "Namespace:        default\n", "Labels:           team=support\n", "Created:          2026-01-01T00:00:00Z (5m ago)\n", "Spec:\n  framework:\n    adapter: langgraph\n", "Status:\n  <none>\n"},
		},
		{name: "describe missing", args: []string{"describe", "tool", "nope"}, wantCode: ExitNotFound},
		{name: "describe needs a name", args: []string{"describe", "tool"}, wantCode: ExitUsage},

		// delete
		{name: "delete", args: []string{"delete", "tool", "zendesk.reply", "zendesk.search"}, wantOut: []string{"tool/zendesk.reply deleted\n", "tool/zendesk.search deleted\n"}},
		{name: "delete missing", args: []string{"delete", "tool", "nope"}, wantCode: ExitNotFound},
		{name: "delete conflict", args: []string{"delete", "agent", "locked"}, wantCode: ExitConflict, wantErr: []string{"Conflict:"}},
		{name: "delete system-written", args: []string{"delete", "compiledagentmanifests", "support-bot-g1"}, wantCode: ExitRejected, wantErr: []string{"Forbidden"}},

		// connection and usage
		{name: "bad token from env", args: []string{"get", "agents"}, env: map[string]string{"WARDEN_TOKEN": "wrong"}, wantCode: ExitUnauthenticated, wantErr: []string{"Unauthenticated", "WARDEN_TOKEN"}},
		{name: "flag token beats env", args: []string{"get", "agents", "--token", testToken}, env: map[string]string{"WARDEN_TOKEN": "wrong"}, wantOut: []string{"support-bot"}},
		{name: "server unreachable", args: []string{"get", "agents", "--server", closedURL}, wantCode: ExitUnreachable, wantErr: []string{"server unreachable", "warden up"}},
		{name: "unknown context", args: []string{"get", "agents", "--context", "nope"}, wantCode: ExitFailure, wantErr: []string{"no such context"}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: ExitUsage, wantErr: []string{`unknown command "frobnicate"`}},
		{name: "unknown flag", args: []string{"get", "agents", "--bogus"}, wantCode: ExitUsage, wantErr: []string{"unknown flag: --bogus"}},
		{name: "help", args: []string{"--help"}, wantOut: []string{"apply", "diff", "up", "approvals", "toolcalls", "demo"}},
		{name: "toolcalls help", args: []string{"toolcalls", "--help"}, wantOut: []string{"top "}},
		{name: "up with an unknown store", args: []string{"up", "--store", "bogus://x", "--port", "$PORT", "--gateway-port", "0", "--memory-port", "0", "--router-port", "0"}, wantCode: ExitFailure, wantErr: []string{"open store bogus://x"}},
		{name: "up port defaults to 8080", args: []string{"up", "--help"}, wantOut: []string{"--port int", "(default 8080)"}},
		{name: "up with a port out of range", args: []string{"up", "--port", "0"}, wantCode: ExitUsage, wantErr: []string{"--port 0 is not a TCP port"}},
		{name: "up without sign-ups per hour", args: []string{"up", "--signups-per-hour", "0"}, wantCode: ExitUsage, wantErr: []string{"--signups-per-hour 0 must be at least 1"}},
		{name: "up with sign-up but no issuer", args: []string{"up", "--signup"}, wantCode: ExitUsage, wantErr: []string{"--signup needs --oidc-issuer"}},
		{name: "up keeping no change history", args: []string{"up", "--change-history", "0"}, wantCode: ExitUsage, wantErr: []string{"--change-history 0 must be a number of entries, or -1"}},
		{name: "up with a non-numeric port", args: []string{"up", "--port", "http"}, wantCode: ExitUsage, wantErr: []string{"invalid argument \"http\" for \"--port\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fx *fixture
			if tt.empty {
				fx = setup(t)
			} else {
				fx = setup(t, seed()...)
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "$DIR", fx.dir), "$PORT", freePort(t))
			}
			res := fx.run(t, tt.env, tt.stdin, args...)
			require.Equal(t, tt.wantCode, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			for _, s := range tt.wantOut {
				require.Contains(t, res.stdout, strings.ReplaceAll(s, "$DIR", fx.dir))
			}
			for _, s := range tt.wantNotOut {
				require.NotContains(t, res.stdout, s)
			}
			for _, s := range tt.wantErr {
				require.Contains(t, res.stderr, strings.ReplaceAll(s, "$DIR", fx.dir))
			}
		})
	}
}

func TestApplyThenGetRoundTrip(t *testing.T) {
	t.Parallel()
	fx := setup(t)
	require.Equal(t, ExitOK, fx.run(t, nil, "", "apply", "-f", filepath.Join(fx.dir, "fleet")).code)
	res := fx.run(t, nil, "", "get", "agents")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "support-bot   gpt-4o   2")

	res = fx.run(t, nil, "", "apply", "-f", filepath.Join(fx.dir, "changed"))
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "agent/support-bot configured")
	require.Contains(t, res.stdout, "compiledagentmanifest support-bot-g2 compiled")
}

func TestSplitDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int
	}{
		{name: "single", in: "a: 1\n", want: 1},
		{name: "leading separator and comment-only document", in: "# c\n---\na: 1\n---\nb: 2\n", want: 2},
		{name: "separator with comment", in: "a: 1\n--- # next\nb: 2", want: 2},
		{name: "trailing separator and end marker", in: "a: 1\n...\n---\n", want: 1},
		{name: "dashes inside a value are not separators", in: "a: |\n  ---x\nb: 2\n", want: 1},
		{name: "json", in: modelJSON, want: 1},
		{name: "empty", in: "\n\n", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Len(t, splitDocuments([]byte(tt.in)), tt.want)
		})
	}
}

func TestAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	tests := []struct{ ts, want string }{
		{now.Add(-30 * time.Second).Format(time.RFC3339), "30s"},
		{now.Add(-5 * time.Minute).Format(time.RFC3339), "5m"},
		{now.Add(-3 * time.Hour).Format(time.RFC3339), "3h"},
		{now.Add(-72 * time.Hour).Format(time.RFC3339), "3d"},
		{now.Add(time.Minute).Format(time.RFC3339), "0s"},
		{"garbage", "<unknown>"},
	}
	for _, tt := range tests {
		t.Run(tt.ts, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, age(tt.ts, now))
		})
	}
}

func TestRunUsesContext(t *testing.T) {
	t.Parallel()
	fx := setup(t, seed()...)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errb bytes.Buffer
	code := RunWith(ctx, Env{Stderr: &errb, LookupEnv: func(k string) (string, bool) {
		if k == clientconfig.EnvHome {
			return fx.home, true
		}
		return "", false
	}}, []string{"warden", "get", "agents"})
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errb.String(), "interrupted")
}
