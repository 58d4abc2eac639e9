package compile

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
)

// applyScenario is the state of a store inside an apply transaction: every
// object (stored before plus applied now) and the applied documents.
type applyScenario struct {
	store   []*resource.Object
	applied []*resource.Object
}

func prodDeployment(t *testing.T) *resource.Object {
	t.Helper()
	objs := loadFleet(t, filepath.Join(fleetDir, "extra", "deploy-prod.yaml"))
	objs[0].Metadata.ResourceVersion = "900"
	return objs[0]
}

func newPolicyObject(name string, rules ...map[string]any) *resource.Object {
	rs := make([]any, len(rules))
	for i, r := range rules {
		rs[i] = r
	}
	o := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindPolicy,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default", Generation: 2, ResourceVersion: "950", UID: "uid-" + name},
		Spec:     map[string]any{"rules": rs}}
	return o
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		setup         func(t *testing.T) applyScenario
		wantManifests []string
		wantDiags     []api.Diagnostic
	}{
		{
			name: "the example fleet applies cleanly",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				return applyScenario{store: objs, applied: objs}
			},
			wantManifests: []string{"support-bot-g1"},
		},
		{
			name: "deploying to prod is denied by model-guard at the Deployment",
			setup: func(t *testing.T) applyScenario {
				objs := append(loadFleet(t), prodDeployment(t))
				return applyScenario{store: objs, applied: objs}
			},
			wantDiags: []api.Diagnostic{{Document: 21, Kind: "Deployment", Namespace: "default", Name: "support-bot-prod",
				Path: "spec.environment", Code: "PolicyDenied", Policy: "model-guard@1",
				Message: "model openai:gpt-4o is denied in environment prod by policy model-guard@1 (rule no-gpt4o-in-prod): gpt-4o is not approved for prod; make claude-sonnet the primary model first"}},
		},
		{
			name: "the prod deployment alone is denied too",
			setup: func(t *testing.T) applyScenario {
				prod := prodDeployment(t)
				return applyScenario{store: append(loadFleet(t), prod), applied: []*resource.Object{prod}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Deployment", Namespace: "default", Name: "support-bot-prod",
				Path: "spec.environment", Code: "PolicyDenied", Policy: "model-guard@1",
				Message: "model openai:gpt-4o is denied in environment prod by policy model-guard@1 (rule no-gpt4o-in-prod): gpt-4o is not approved for prod; make claude-sonnet the primary model first"}},
		},
		{
			name: "switching a prod agent to gpt-4o is denied at the model field",
			setup: func(t *testing.T) applyScenario {
				objs := append(loadFleet(t), prodDeployment(t))
				agent := find(objs, resource.KindAgent, "support-bot")
				agent.Spec["modelRoute"] = map[string]any{"primary": "claude-sonnet", "fallback": []any{"gpt-4o"}}
				agent.Metadata.Generation = 2
				return applyScenario{store: objs, applied: []*resource.Object{agent}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Agent", Namespace: "default", Name: "support-bot",
				Path: "spec.modelRoute.fallback[0]", Code: "PolicyDenied", Policy: "model-guard@1",
				Message: "model openai:gpt-4o is denied in environment prod by policy model-guard@1 (rule no-gpt4o-in-prod): gpt-4o is not approved for prod; make claude-sonnet the primary model first"}},
		},
		{
			name: "moving prod to claude-sonnet alone compiles",
			setup: func(t *testing.T) applyScenario {
				objs := append(loadFleet(t), prodDeployment(t))
				agent := find(objs, resource.KindAgent, "support-bot")
				agent.Spec["modelRoute"] = map[string]any{"primary": "claude-sonnet"}
				agent.Metadata.Generation = 3
				return applyScenario{store: objs, applied: []*resource.Object{agent}}
			},
			wantManifests: []string{"support-bot-g3"},
		},
		{
			name: "a model losing a capability is blamed on the Model document",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				model := find(objs, resource.KindModel, "claude-sonnet")
				model.Spec["capabilities"].(map[string]any)["toolUse"] = false
				return applyScenario{store: objs, applied: []*resource.Object{model}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Model", Namespace: "default", Name: "claude-sonnet",
				Path: "spec.capabilities.toolUse", Code: "Forbidden",
				Message: "model anthropic:claude-sonnet (Model claude-sonnet) lacks toolUse, which agent support-bot requires"}},
		},
		{
			name: "a changed tool recompiles the agents that use it",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				tool := find(objs, resource.KindTool, "shell.exec")
				tool.Spec["requiresApproval"] = true
				other := find(objs, resource.KindTool, "zendesk.reply").DeepCopy()
				other.Metadata.Name, other.Metadata.UID = "zendesk.unused", "uid-unused"
				return applyScenario{store: append(objs, other), applied: []*resource.Object{tool, other}}
			},
			wantManifests: []string{"support-bot-g1"},
		},
		{
			name: "a changed RAG index recompiles the agents that bind it",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				ix := find(objs, resource.KindRAGIndex, "support-kb")
				ix.Spec["topK"] = int64(8)
				return applyScenario{store: objs, applied: []*resource.Object{ix}}
			},
			wantManifests: []string{"support-bot-g1"},
		},
		{
			name: "a changed model an index embeds with recompiles the agents that bind the index",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				find(objs, resource.KindRAGIndex, "support-kb").Spec["embedding"] = map[string]any{"modelRef": "embedder"}
				embedder := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindModel, Metadata: resource.ObjectMeta{Name: "embedder", Namespace: "default"},
					Spec: map[string]any{"provider": "openai", "model": "text-embedding-3-small"}}
				unused := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindModel, Metadata: resource.ObjectMeta{Name: "unused", Namespace: "default"},
					Spec: map[string]any{"provider": "openai", "model": "text-embedding-3-large"}}
				return applyScenario{store: append(objs, embedder, unused), applied: []*resource.Object{embedder, unused}}
			},
			wantManifests: []string{"support-bot-g1"},
		},
		{
			name: "a RAG index whose source is missing is blamed on the index",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				ix := find(objs, resource.KindRAGIndex, "support-kb")
				ix.Spec["sources"] = []any{"support-handbook", "ghost"}
				return applyScenario{store: objs, applied: []*resource.Object{ix}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "RAGIndex", Namespace: "default", Name: "support-kb", Path: "spec.sources[1]", Code: "NotFound",
				Message: `RAG index support-kb reads knowledge source "ghost", but no KnowledgeSource "ghost" exists in namespace default`}},
		},
		{
			name: "an applied agent binding a missing RAG index",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				agent := find(objs, resource.KindAgent, "support-bot")
				agent.Spec["memory"].(map[string]any)["knowledge"] = []any{"support-kb", "wiki"}
				return applyScenario{store: objs, applied: []*resource.Object{agent}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Agent", Namespace: "default", Name: "support-bot", Path: "spec.memory.knowledge[1]", Code: "NotFound",
				Message: `agent support-bot retrieves from RAG index "wiki", but no RAGIndex "wiki" exists in namespace default`}},
		},
		{
			name: "an unreferenced tool touches no agent",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				other := find(objs, resource.KindTool, "zendesk.reply").DeepCopy()
				other.Metadata.Name = "zendesk.unused"
				return applyScenario{store: append(objs, other), applied: []*resource.Object{other}}
			},
		},
		{
			name: "a deployment of a missing agent to a missing environment",
			setup: func(t *testing.T) applyScenario {
				objs := loadFleet(t)
				dep := prodDeployment(t)
				dep.Spec["agentRef"] = map[string]any{"name": "ghost"}
				dep.Spec["environment"] = "qa"
				return applyScenario{store: append(objs, dep), applied: []*resource.Object{dep}}
			},
			wantDiags: []api.Diagnostic{
				{Document: 0, Kind: "Deployment", Namespace: "default", Name: "support-bot-prod", Path: "spec.environment", Code: "NotFound",
					Message: `deployment support-bot-prod targets environment "qa", but no Environment "qa" exists`},
				{Document: 0, Kind: "Deployment", Namespace: "default", Name: "support-bot-prod", Path: "spec.agentRef.name", Code: "NotFound",
					Message: `deployment support-bot-prod deploys agent "ghost", but no Agent "ghost" exists in namespace default`},
			},
		},
		{
			name: "a deployment of an agent that no longer compiles",
			setup: func(t *testing.T) applyScenario {
				objs := remove(loadFleet(t), resource.KindTool, "shell.exec")
				dep := find(objs, resource.KindDeployment, "support-bot-dev")
				return applyScenario{store: objs, applied: []*resource.Object{dep}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Deployment", Namespace: "default", Name: "support-bot-dev", Path: "spec.agentRef.name", Code: "NotFound",
				Message: `agent support-bot does not compile: spec.tools[5].name: agent support-bot uses tool "shell.exec", but no Tool "shell.exec" exists in namespace default`}},
		},
		{
			name: "an applied agent reports its own missing references",
			setup: func(t *testing.T) applyScenario {
				objs := remove(loadFleet(t), resource.KindModel, "claude-sonnet")
				return applyScenario{store: objs, applied: objs}
			},
			wantDiags: []api.Diagnostic{{Document: 17, Kind: "Agent", Namespace: "default", Name: "support-bot", Path: "spec.modelRoute.fallback[0]", Code: "NotFound",
				Message: `agent support-bot routes to model "claude-sonnet", but no Model "claude-sonnet" exists in namespace default`}},
		},
		{
			name: "a policy whose rule does not compile",
			setup: func(t *testing.T) applyScenario {
				p := newPolicyObject("broken", map[string]any{"name": "r", "hooks": []any{"preflight"}, "when": `models.exists(m,`, "action": "deny"})
				return applyScenario{store: append(loadFleet(t), p), applied: []*resource.Object{p}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Policy", Namespace: "default", Name: "broken", Path: "spec.rules[0].when", Code: "Invalid"}},
		},
		{
			name: "a new policy that denies an existing deployment is blamed on its rule",
			setup: func(t *testing.T) applyScenario {
				p := newPolicyObject("no-privileged-in-staging", map[string]any{"name": "r", "hooks": []any{"preflight"},
					"when": `environment == "staging" && tools.exists(t, t.sideEffect == "privileged")`, "action": "deny"})
				return applyScenario{store: append(loadFleet(t), p), applied: []*resource.Object{p}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Policy", Namespace: "default", Name: "no-privileged-in-staging", Path: "spec.rules[0].when",
				Code: "PolicyDenied", Policy: "no-privileged-in-staging@2",
				Message: "tool k8s.scale_deployment is denied in environment staging by policy no-privileged-in-staging@2 (rule r)"}},
		},
		{
			name: "a preflight rule failing at run time denies (fail closed)",
			setup: func(t *testing.T) applyScenario {
				p := newPolicyObject("fragile", map[string]any{"name": "r", "hooks": []any{"preflight"},
					"when": `object.spec.nope > 1`, "action": "allow"})
				objs := loadFleet(t)
				dep := find(objs, resource.KindDeployment, "support-bot-dev")
				return applyScenario{store: append(objs, p), applied: []*resource.Object{dep}}
			},
			wantDiags: []api.Diagnostic{{Document: 0, Kind: "Deployment", Namespace: "default", Name: "support-bot-dev", Path: "spec.environment",
				Code: "PolicyDenied", Policy: "fragile@2",
				Message: "rule r of policy fragile@2 failed to evaluate at preflight, so it counts as deny (fail closed): no such key: nope (agent support-bot, environment dev)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := tt.setup(t)
			manifests, diags, err := newCompiler().Reconcile(context.Background(), &fakeReader{objs: sc.store}, sc.applied)
			require.NoError(t, err)
			if len(tt.wantDiags) > 0 && tt.wantDiags[0].Message == "" {
				// Only the shape is pinned; CEL's wording is its own.
				require.Len(t, diags, len(tt.wantDiags))
				diags[0].Message = ""
			}
			require.Equal(t, tt.wantDiags, diags)
			var names []string
			for _, m := range manifests {
				names = append(names, m.Metadata.Name)
			}
			require.Equal(t, tt.wantManifests, names)
		})
	}
}

func TestDiagnosticJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(api.Diagnostic{Document: 2, Kind: "Agent", Namespace: "default", Name: "a", Path: "spec", Code: "NotFound", Message: "m"})
	require.NoError(t, err)
	require.JSONEq(t, `{"document":2,"kind":"Agent","namespace":"default","name":"a","path":"spec","code":"NotFound","message":"m"}`, string(b))
}
