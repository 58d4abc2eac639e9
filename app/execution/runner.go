package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

// maxResponseBytes bounds what is read from the model router or gateway.
const maxResponseBytes = 8 << 20

// ChatMessage is one message of the OpenAI Chat Completions wire format.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// ChatToolCall is a function call a model asks for.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Tools    []chatTool    `json:"tools,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message      ChatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
}

// FunctionName is the OpenAI function name of a tool: function names
// allow [a-zA-Z0-9_-] only, so the dot of "<system>.<action>" becomes "__".
func FunctionName(tool string) string { return strings.ReplaceAll(tool, ".", "__") }

func str(s string) *string { return &s }

// plan is what a run needs, read once at its start.
type plan struct {
	agent, env, manifest, model string
	system, prompt              string
	tools                       []chatTool
	byFunction                  map[string]string
}

// load reads the execution's manifest, the agent's system prompt and the
// tools' schemas.
func (s *Service) load(ctx context.Context, tenant string, exec *resource.Object) (*plan, error) {
	spec, err := resource.DecodeSpec[resource.ExecutionSpec](exec)
	if err != nil {
		return nil, fmt.Errorf("decode execution spec: %w", err)
	}
	p := &plan{agent: spec.AgentRef.Name, env: spec.Environment, manifest: spec.Manifest, byFunction: map[string]string{}}
	if v, ok := spec.Input["prompt"].(string); ok {
		p.prompt = v
	} else {
		b, _ := json.Marshal(spec.Input)
		p.prompt = string(b)
	}
	ns := exec.Metadata.Namespace
	err = s.cfg.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		m, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindCompiledAgentManifest, Namespace: ns, Name: spec.Manifest})
		if err != nil {
			return fmt.Errorf("read manifest %s: %w", spec.Manifest, err)
		}
		ms, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
		if err != nil {
			return fmt.Errorf("decode manifest %s: %w", spec.Manifest, err)
		}
		p.model = ms.ModelRoute.Primary
		if a, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: ns, Name: p.agent}); err == nil {
			as, _ := resource.DecodeSpec[resource.AgentSpec](a)
			p.system = as.SystemPrompt
		}
		for _, t := range ms.Tools {
			fn := chatFunction{Name: FunctionName(t.Name), Parameters: map[string]any{"type": "object"}}
			if o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindTool, Namespace: ns, Name: t.Name}); err == nil {
				ts, _ := resource.DecodeSpec[resource.ToolSpec](o)
				fn.Description = ts.Description
				if ts.InputSchema != nil {
					fn.Parameters = ts.InputSchema
				}
			}
			p.tools = append(p.tools, chatTool{Type: "function", Function: fn})
			p.byFunction[fn.Name] = t.Name
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// errStopped ends a run whose execution was cancelled or finished
// elsewhere.
var errStopped = errors.New("execution stopped")

// Run runs an execution to its end: the job's work. It is safe to repeat:
// a finished execution is left alone, and a run that starts again after a
// crash replays its tool calls through the gateway's idempotency. It
// returns an error only when the run should be retried (the store or the
// process failed); a failed run is recorded as phase Failed.
func (s *Service) Run(ctx context.Context, tenant, ns, name string) error {
	exec, err := s.Get(ctx, tenant, ns, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if Finished(phaseOf(exec)) {
		return nil
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	rk := runKey(tenant, ns, name)
	s.mu.Lock()
	s.running[rk] = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, rk)
		s.mu.Unlock()
	}()

	started := timestamp(s.now())
	if _, err := s.transition(ctx, tenant, ns, name, unfinished, PhaseRunning, func(st map[string]any) {
		if _, ok := st["startedAt"]; !ok {
			st["startedAt"] = started
		}
	}, events.ExecutionStarted, map[string]any{"phase": PhaseRunning}); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	output, runErr := s.loop(ctx, tenant, exec)
	switch {
	case errors.Is(runErr, errStopped):
		return nil
	case runErr != nil && ctx.Err() != nil:
		// Cancelled here (Cancel already recorded it) or shutting down:
		// a retry of the job finds out which.
		cur, err := s.Get(context.WithoutCancel(ctx), tenant, ns, name)
		if err == nil && Finished(phaseOf(cur)) {
			return nil
		}
		return fmt.Errorf("run of execution %s interrupted: %w", name, runErr)
	case runErr != nil:
		_, err := s.finish(ctx, tenant, ns, name, PhaseFailed, nil, runErr.Error())
		return ignoreFinished(err)
	}
	_, err = s.finish(ctx, tenant, ns, name, PhaseSucceeded, output, "")
	return ignoreFinished(err)
}

// ignoreFinished drops the conflict of finishing a run someone cancelled.
func ignoreFinished(err error) error {
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// loop is the agent loop: model, tools, model … until an answer.
func (s *Service) loop(ctx context.Context, tenant string, exec *resource.Object) (map[string]any, error) {
	ns, name := exec.Metadata.Namespace, exec.Metadata.Name
	p, err := s.load(ctx, tenant, exec)
	if err != nil {
		return nil, err
	}
	var msgs []ChatMessage
	if p.system != "" {
		msgs = append(msgs, ChatMessage{Role: "system", Content: str(p.system)})
	}
	msgs = append(msgs, ChatMessage{Role: "user", Content: str(p.prompt)})
	var calls, tools []any
	for step := 1; step <= s.cfg.MaxSteps; step++ {
		if err := s.stillRunning(ctx, tenant, ns, name); err != nil {
			return nil, err
		}
		if err := s.record(ctx, tenant, ns, name, events.ModelCallStarted, map[string]any{"step": step, "model": p.model}); err != nil {
			return nil, err
		}
		msg, finish, err := s.chat(ctx, tenant, ns, p, chatRequest{Model: p.model, Messages: msgs, Tools: p.tools})
		if err != nil {
			return nil, err
		}
		if err := s.record(ctx, tenant, ns, name, events.ModelCallCompleted, map[string]any{
			"step": step, "model": p.model, "finishReason": finish, "toolCalls": len(msg.ToolCalls)}); err != nil {
			return nil, err
		}
		if len(msg.ToolCalls) == 0 {
			answer := ""
			if msg.Content != nil {
				answer = *msg.Content
			}
			return map[string]any{"answer": answer, "steps": step, "toolCalls": calls, "tools": tools}, nil
		}
		msg.Role = "assistant"
		msgs = append(msgs, msg)
		for _, tc := range msg.ToolCalls {
			result, callName, err := s.callTool(ctx, tenant, exec, p, step, tc)
			if err != nil {
				return nil, err
			}
			if callName != "" {
				calls = append(calls, callName)
				tools = append(tools, p.byFunction[tc.Function.Name])
			}
			msgs = append(msgs, ChatMessage{Role: "tool", ToolCallID: tc.ID, Content: str(result)})
		}
		if _, err := s.transition(ctx, tenant, ns, name, []string{PhaseRunning}, PhaseRunning, func(st map[string]any) {
			st["steps"] = int64(step)
			st["toolCalls"] = calls
		}, "", nil); err != nil {
			if errors.Is(err, ErrConflict) {
				return nil, errStopped
			}
			return nil, err
		}
	}
	return nil, fmt.Errorf("step limit reached: the model did not answer within %d model calls", s.cfg.MaxSteps)
}

// stillRunning reports errStopped when the execution was cancelled or
// finished by someone else.
func (s *Service) stillRunning(ctx context.Context, tenant, ns, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := s.Get(ctx, tenant, ns, name)
	if err != nil {
		return err
	}
	if Finished(phaseOf(cur)) {
		return errStopped
	}
	return nil
}

// token issues a workload token of the agent for audience.
func (s *Service) token(ctx context.Context, tenant, ns string, p *plan, audience string) (string, error) {
	tok, _, err := s.cfg.Issuer.Issue(ctx, workload.IssueParams{Tenant: tenant, Namespace: ns, Agent: p.agent, Environment: p.env, Audience: audience})
	if err != nil {
		return "", fmt.Errorf("issue workload token for %s: %w", audience, err)
	}
	return tok, nil
}

// chat calls the model router's chat completions endpoint.
func (s *Service) chat(ctx context.Context, tenant, ns string, p *plan, req chatRequest) (ChatMessage, string, error) {
	tok, err := s.token(ctx, tenant, ns, p, workload.AudienceModelRouter)
	if err != nil {
		return ChatMessage{}, "", err
	}
	status, body, _, err := s.do(ctx, http.MethodPost, s.cfg.ModelRouterURL+"/v1/chat/completions", tok, req, nil)
	if err != nil {
		return ChatMessage{}, "", fmt.Errorf("model router: %w", err)
	}
	if status != http.StatusOK {
		return ChatMessage{}, "", fmt.Errorf("model router answered %d: %s", status, errorText(body))
	}
	return ParseChatResponse(body)
}

// ParseChatResponse reads a Chat Completions answer: the first choice's
// message and finish reason. Tool calls must be function calls with an
// id and a name.
func ParseChatResponse(body []byte) (msg ChatMessage, finishReason string, err error) {
	var resp chatResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return ChatMessage{}, "", fmt.Errorf("model router answered an unreadable body: %w", err)
	}
	if len(resp.Choices) == 0 {
		return ChatMessage{}, "", errors.New("model router answered no choices")
	}
	msg = resp.Choices[0].Message
	for i, tc := range msg.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" || (tc.Type != "" && tc.Type != "function") {
			return ChatMessage{}, "", fmt.Errorf("model router answered a malformed tool call %d: it needs an id and a function name", i)
		}
	}
	return msg, resp.Choices[0].FinishReason, nil
}

// ParseArguments reads a tool call's arguments: a JSON object, or nothing.
func ParseArguments(s string) (map[string]any, error) {
	input := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return input, nil
	}
	if err := json.Unmarshal([]byte(s), &input); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	if input == nil {
		return map[string]any{}, nil
	}
	return input, nil
}

// do sends one JSON request and reads the answer.
func (s *Service) do(ctx context.Context, method, u, bearer string, in any, hdr http.Header) (int, []byte, http.Header, error) {
	var rd io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, body, resp.Header, nil
}

// errorText is the message of an error body, or a prefix of the body.
func errorText(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return string(body[:min(len(body), 200)])
}

// callTool sends one tool call of the model through the gateway and
// returns what the model is told: the call's output, or the reason it was
// refused or failed. An error ends the run.
func (s *Service) callTool(ctx context.Context, tenant string, exec *resource.Object, p *plan, step int, tc ChatToolCall) (string, string, error) {
	ns, name := exec.Metadata.Namespace, exec.Metadata.Name
	tool, ok := p.byFunction[tc.Function.Name]
	if !ok {
		return fmt.Sprintf(`{"error":{"code":"NotFound","message":"the agent has no tool %q"}}`, tc.Function.Name), "", nil
	}
	input, err := ParseArguments(tc.Function.Arguments)
	if err != nil {
		return `{"error":{"code":"InvalidRequest","message":"the arguments are not a JSON object"}}`, "", nil
	}
	if err := s.record(ctx, tenant, ns, name, events.ToolCallRequested, map[string]any{"step": step, "tool": tool}); err != nil {
		return "", "", err
	}
	tok, err := s.token(ctx, tenant, ns, p, workload.AudienceToolGateway)
	if err != nil {
		return "", "", err
	}
	status, body, hdr, err := s.do(ctx, http.MethodPost, s.cfg.ToolGatewayURL+"/v1/tool-calls", tok,
		map[string]any{"tool": tool, "input": input, "execution": name}, nil)
	if err != nil {
		return "", "", fmt.Errorf("tool gateway: %w", err)
	}
	callName := hdr.Get("Warden-Tool-Call")
	if status == http.StatusAccepted {
		if status, body, err = s.await(ctx, tenant, exec, p, callName); err != nil {
			return "", callName, err
		}
	}
	data := map[string]any{"step": step, "tool": tool, "toolCall": callName, "status": status}
	if hdr.Get("Idempotent-Replayed") == "true" {
		data["replayed"] = true
	}
	var call resource.Object
	if status == http.StatusOK && json.Unmarshal(body, &call) == nil {
		data["phase"] = phaseOf(&call)
		if err := s.record(ctx, tenant, ns, name, events.ToolCallCompleted, data); err != nil {
			return "", callName, err
		}
		out, _ := json.Marshal(call.Status["output"])
		return string(out), callName, nil
	}
	if status >= 500 && status != http.StatusBadGateway {
		return "", callName, fmt.Errorf("tool gateway answered %d for %s: %s", status, tool, errorText(body))
	}
	data["error"] = errorText(body)
	if err := s.record(ctx, tenant, ns, name, events.ToolCallCompleted, data); err != nil {
		return "", callName, err
	}
	// A refusal (policy, budget, approver) or a tool failure: the agent
	// receives the reason, as SPEC.md says, and goes on.
	return string(body), callName, nil
}

// await pauses the execution (phase Waiting) while a call awaits its
// approval and returns the gateway's answer once it is decided.
func (s *Service) await(ctx context.Context, tenant string, exec *resource.Object, p *plan, call string) (int, []byte, error) {
	ns, name := exec.Metadata.Namespace, exec.Metadata.Name
	if _, err := s.transition(ctx, tenant, ns, name, []string{PhaseRunning}, PhaseWaiting, func(st map[string]any) {
		st["waitingOn"] = call
	}, events.ApprovalRequested, map[string]any{"toolCall": call, "phase": PhaseWaiting}); err != nil {
		if errors.Is(err, ErrConflict) {
			return 0, nil, errStopped
		}
		return 0, nil, err
	}
	for {
		if err := s.stillRunning(ctx, tenant, ns, name); err != nil {
			if errors.Is(err, errStopped) || ctx.Err() != nil {
				s.cancelCall(context.WithoutCancel(ctx), tenant, ns, p, call)
			}
			return 0, nil, err
		}
		tok, err := s.token(ctx, tenant, ns, p, workload.AudienceToolGateway)
		if err != nil {
			return 0, nil, err
		}
		u := s.cfg.ToolGatewayURL + "/v1/tool-calls/" + url.PathEscape(call) + "?wait=" + s.cfg.ApprovalPoll.String()
		status, body, _, err := s.do(ctx, http.MethodGet, u, tok, nil, nil)
		if err != nil {
			if ctx.Err() != nil {
				s.cancelCall(context.WithoutCancel(ctx), tenant, ns, p, call)
			}
			return 0, nil, fmt.Errorf("tool gateway: %w", err)
		}
		if status == http.StatusAccepted {
			continue
		}
		typ := events.ApprovalGranted
		if status != http.StatusOK {
			typ = events.ApprovalDenied
		}
		if _, err := s.transition(ctx, tenant, ns, name, []string{PhaseWaiting}, PhaseRunning, func(st map[string]any) {
			delete(st, "waitingOn")
		}, typ, map[string]any{"toolCall": call, "phase": PhaseRunning}); err != nil {
			if errors.Is(err, ErrConflict) {
				return 0, nil, errStopped
			}
			return 0, nil, err
		}
		return status, body, nil
	}
}

// cancelCall cancels a call that awaits approval when its execution
// stops; best effort (the approval expires otherwise).
func (s *Service) cancelCall(ctx context.Context, tenant, ns string, p *plan, call string) {
	tok, err := s.token(ctx, tenant, ns, p, workload.AudienceToolGateway)
	if err != nil {
		return
	}
	status, body, _, err := s.do(ctx, http.MethodPost, s.cfg.ToolGatewayURL+"/v1/tool-calls/"+url.PathEscape(call)+"/cancel", tok, nil, nil)
	if err != nil || status != http.StatusOK {
		s.log.Debug("cancel of a waiting tool call refused", "toolCall", call, "status", status, "err", err, "answer", errorText(body))
	}
}
