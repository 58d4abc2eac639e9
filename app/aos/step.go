package aos

// StepContext is the context of every steps/* request (the schema's
// StepContext): which agent, session, turn and step, when, and for whom.
type StepContext struct {
	Agent   Agent   `json:"agent"`
	Session Session `json:"session"`
	// TurnID is the current turn of the session.
	TurnID string `json:"turnId"`
	// StepID is the current step of the turn.
	StepID string `json:"stepId"`
	// Timestamp is an RFC 3339 date-time, kept as sent: the schema's
	// date-time format accepts forms (leap seconds, lower-case "t")
	// time.Parse refuses.
	Timestamp string `json:"timestamp"`
	// User is the person the agent acts for, when known.
	User *User `json:"user,omitempty"`
}

// Agent describes the agent that runs the step. The schema requires every
// field but Description; its other optional members (tools, model, …)
// stay in Request.Params.
type Agent struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// URL is where the agent is hosted. The schema requires it although
	// none of the AOS authors' examples sends it.
	URL          string        `json:"url"`
	Description  string        `json:"description,omitempty"`
	Instructions string        `json:"instructions"`
	Version      string        `json:"version"`
	Provider     AgentProvider `json:"provider"`
}

// AgentProvider is the organisation that provides the agent.
type AgentProvider struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Session is the conversation the step belongs to.
type Session struct {
	ID string `json:"id"`
}

// User is the person an agent acts for.
type User struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// ToolCallRequestParams are the params of steps/toolCallRequest.
type ToolCallRequestParams struct {
	Context         StepContext     `json:"context"`
	ToolCallRequest ToolCallRequest `json:"toolCallRequest"`
	// Reasoning is the agent's stated reason for the call.
	Reasoning string `json:"reasoning,omitempty"`
}

// ToolCallRequest is the call an agent is about to make.
type ToolCallRequest struct {
	// ExecutionID is set by the agent and repeated in the result.
	ExecutionID string `json:"executionId"`
	ToolID      string `json:"toolId"`
	// Inputs are the arguments; InputMap turns them into an object.
	Inputs []ToolArgumentValue `json:"inputs"`
}

// ToolArgumentValue is one named tool argument.
type ToolArgumentValue struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"`
	// Value is any JSON value; numbers decoded here are json.Number.
	Value any `json:"value"`
}

// ToolCallResultParams are the params of steps/toolCallResult.
type ToolCallResultParams struct {
	Context        StepContext    `json:"context"`
	ToolCallResult ToolCallResult `json:"toolCallResult"`
	// Reasoning is not in the schema's ToolCallResultStep, but the AOS
	// examples send it and the schema allows extra members.
	Reasoning string `json:"reasoning,omitempty"`
}

// ToolCallResult is what a tool call returned.
type ToolCallResult struct {
	ExecutionID string     `json:"executionId"`
	Result      ToolResult `json:"result"`
}

// ToolResult is a tool's output (the schema's ToolCallResult definition).
type ToolResult struct {
	// Outputs are text parts; Outputs and OutputValue convert them.
	Outputs []TextPart `json:"outputs"`
	IsError bool       `json:"isError"`
}

// TextPart is a part of kind "text".
type TextPart struct {
	// Kind is "text"; the schema lets a sender leave it out.
	Kind string `json:"kind,omitempty"`
	Text string `json:"text"`
}

// The functions below read typed params out of a request value the schema
// has already accepted. They look members up by their exact names:
// decoding the same bytes into structs with encoding/json would match
// names case-insensitively, so {"toolCallRequest": …, "ToolCallRequest": …}
// could be validated as one call and evaluated as another.

func toolCallRequestParams(p map[string]any) *ToolCallRequestParams {
	tc := obj(p, "toolCallRequest")
	out := &ToolCallRequestParams{
		Context: stepContext(obj(p, "context")),
		ToolCallRequest: ToolCallRequest{
			ExecutionID: str(tc, "executionId"),
			ToolID:      str(tc, "toolId"),
			Inputs:      []ToolArgumentValue{},
		},
		Reasoning: str(p, "reasoning"),
	}
	for _, in := range arr(tc, "inputs") {
		m, _ := in.(map[string]any)
		out.ToolCallRequest.Inputs = append(out.ToolCallRequest.Inputs,
			ToolArgumentValue{Name: str(m, "name"), ID: str(m, "id"), Value: m["value"]})
	}
	return out
}

func toolCallResultParams(p map[string]any) *ToolCallResultParams {
	tr := obj(p, "toolCallResult")
	res := obj(tr, "result")
	out := &ToolCallResultParams{
		Context: stepContext(obj(p, "context")),
		ToolCallResult: ToolCallResult{
			ExecutionID: str(tr, "executionId"),
			Result:      ToolResult{Outputs: []TextPart{}},
		},
		Reasoning: str(p, "reasoning"),
	}
	out.ToolCallResult.Result.IsError, _ = res["isError"].(bool)
	for _, o := range arr(res, "outputs") {
		m, _ := o.(map[string]any)
		out.ToolCallResult.Result.Outputs = append(out.ToolCallResult.Result.Outputs,
			TextPart{Kind: str(m, "kind"), Text: str(m, "text")})
	}
	return out
}

func stepContext(c map[string]any) StepContext {
	a := obj(c, "agent")
	p := obj(a, "provider")
	sc := StepContext{
		Agent: Agent{
			ID:           str(a, "id"),
			Name:         str(a, "name"),
			URL:          str(a, "url"),
			Description:  str(a, "description"),
			Instructions: str(a, "instructions"),
			Version:      str(a, "version"),
			Provider:     AgentProvider{Name: str(p, "name"), URL: str(p, "url")},
		},
		Session:   Session{ID: str(obj(c, "session"), "id")},
		TurnID:    str(c, "turnId"),
		StepID:    str(c, "stepId"),
		Timestamp: str(c, "timestamp"),
	}
	if u := obj(c, "user"); u != nil {
		sc.User = &User{ID: str(u, "id"), Name: str(u, "name"), Email: str(u, "email")}
	}
	return sc
}

// requestFrom builds a Request from an accepted request value; params are
// re-encoded from the value, so they hold exactly what was validated.
func requestFrom(m map[string]any) (*Request, error) {
	r := &Request{JSONRPC: JSONRPCVersion, Method: str(m, "method")}
	var err error
	if r.ID, err = marshalJSON(m["id"]); err != nil {
		return nil, err
	}
	if ts, ok := m["timestamp"]; ok {
		if r.Timestamp, err = marshalJSON(ts); err != nil {
			return nil, err
		}
	}
	if p, ok := m["params"]; ok && p != nil {
		if r.Params, err = marshalJSON(p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func arr(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
