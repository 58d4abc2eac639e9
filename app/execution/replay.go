package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

// Annotations the tool gateway puts on the ToolCalls it records.
const (
	annotationReplayOf    = "warden.dev/replay-of"
	annotationEnvironment = "warden.dev/environment"
	// callerKeyPrefix marks an idempotency key the caller chose
	// (Idempotency-Key header) in the gateway's records.
	callerKeyPrefix = "caller:"
)

// ReplayRequest is the body of POST …/executions/{name}/replay.
type ReplayRequest struct {
	// Force re-executes every call through the gateway's replay of a
	// single call (POST /v1/tool-calls/{id}/replay), which a policy of the
	// agent must allow (idempotency.allowForce); otherwise PolicyDenied.
	Force bool `json:"force,omitempty"`
}

// ReplayItem is the outcome of one replayed call.
type ReplayItem struct {
	// ToolCall is the recorded call replayed.
	ToolCall string `json:"toolCall"`
	Tool     string `json:"tool"`
	// Replay is the call the gateway answered with: the original itself
	// when it deduplicated the replay, a new call otherwise.
	Replay string `json:"replay,omitempty"`
	// Deduplicated is true when the gateway returned the recorded result
	// without running the tool again.
	Deduplicated bool `json:"deduplicated"`
	// Phase is the answering call's phase.
	Phase string `json:"phase,omitempty"`
	// Status is the gateway's HTTP status.
	Status int `json:"status"`
	// Error is the gateway's refusal, if any.
	Error string `json:"error,omitempty"`
	// Output is the answering call's output.
	Output map[string]any `json:"output,omitempty"`
}

// ReplayResult answers a replay.
type ReplayResult struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Execution  string       `json:"execution"`
	Namespace  string       `json:"namespace"`
	Force      bool         `json:"force"`
	Items      []ReplayItem `json:"items"`
}

// Replay sends the tool calls a finished execution recorded through the
// gateway again, in the order they were made. Without force each goes
// with its recorded idempotency key, so the gateway answers with the
// recorded result and never runs the tool twice within its idempotency
// window; with force each goes through the gateway's replay of a single
// call as the caller (authorization, forwarded: its Authorization
// header), which re-executes only where policy allows force.
func (s *Service) Replay(ctx context.Context, p auth.Principal, ns, name string, req ReplayRequest, authorization string) (*ReplayResult, error) {
	exec, err := s.Get(ctx, p.Tenant, ns, name)
	if err != nil {
		return nil, err
	}
	if !Finished(phaseOf(exec)) {
		return nil, fmt.Errorf("%w: execution %q is %s; replay a finished execution", ErrConflict, name, phaseOf(exec))
	}
	spec, _ := resource.DecodeSpec[resource.ExecutionSpec](exec)
	calls, err := s.recordedCalls(ctx, p.Tenant, ns, name)
	if err != nil {
		return nil, err
	}
	res := &ReplayResult{APIVersion: resource.GroupVersion, Kind: "ExecutionReplay", Execution: name, Namespace: ns, Force: req.Force, Items: []ReplayItem{}}
	for _, c := range calls {
		cs, err := resource.DecodeSpec[resource.ToolCallSpec](c)
		if err != nil {
			return nil, fmt.Errorf("decode tool call %s: %w", c.Metadata.Name, err)
		}
		item := ReplayItem{ToolCall: c.Metadata.Name, Tool: cs.ToolRef.Name}
		var status int
		var body []byte
		var hdr http.Header
		if req.Force {
			h := http.Header{}
			h.Set("Authorization", authorization)
			h.Set(auth.HeaderTenant, p.Tenant)
			status, body, hdr, err = s.do(ctx, http.MethodPost,
				s.cfg.ToolGatewayURL+"/v1/tool-calls/"+url.PathEscape(c.Metadata.Name)+"/replay?namespace="+url.QueryEscape(ns), "", nil, h)
		} else {
			env := c.Metadata.Annotations[annotationEnvironment]
			if env == "" {
				env = spec.Environment
			}
			var tok string
			tok, _, err = s.cfg.Issuer.Issue(ctx, workload.IssueParams{Tenant: p.Tenant, Namespace: ns, Agent: cs.AgentRef.Name,
				Environment: env, Audience: workload.AudienceToolGateway})
			if err != nil {
				return nil, fmt.Errorf("issue workload token: %w", err)
			}
			// The same tool, input and agent derive the recorded key; a
			// key the caller chose is stored as "caller:<key>".
			h := http.Header{}
			if k, ok := strings.CutPrefix(cs.SideEffects.IdempotencyKey, callerKeyPrefix); ok {
				h.Set("Idempotency-Key", k)
			}
			status, body, hdr, err = s.do(ctx, http.MethodPost, s.cfg.ToolGatewayURL+"/v1/tool-calls", tok,
				map[string]any{"tool": cs.ToolRef.Name, "input": cs.Input, "execution": name}, h)
		}
		if err != nil {
			return nil, fmt.Errorf("tool gateway: %w", err)
		}
		item.Status = status
		item.Replay = hdr.Get("Warden-Tool-Call")
		item.Deduplicated = hdr.Get("Idempotent-Replayed") == "true"
		var call resource.Object
		if status < 300 && json.Unmarshal(body, &call) == nil {
			item.Phase = phaseOf(&call)
			item.Output, _ = call.Status["output"].(map[string]any)
		} else {
			item.Error = errorText(body)
		}
		res.Items = append(res.Items, item)
	}
	return res, nil
}

// recordedCalls lists the calls execution name made, oldest first,
// without the replays of them.
func (s *Service) recordedCalls(ctx context.Context, tenant, ns, name string) ([]*resource.Object, error) {
	sel, err := resource.ParseSelector("spec.executionRef.name=" + name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var out []*resource.Object
	err = s.cfg.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		cont := ""
		for {
			l, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindToolCall, Namespace: ns, Selector: sel, Limit: store.MaxPageSize, Continue: cont})
			if err != nil {
				return fmt.Errorf("list tool calls of %s: %w", name, err)
			}
			for _, c := range l.Items {
				if c.Metadata.Annotations[annotationReplayOf] == "" {
					out = append(out, c)
				}
			}
			if l.Continue == "" {
				return nil
			}
			cont = l.Continue
		}
	})
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Metadata, out[j].Metadata
		if a.CreationTimestamp != b.CreationTimestamp {
			return a.CreationTimestamp < b.CreationTimestamp
		}
		return a.Name < b.Name
	})
	return out, err
}
