package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
)

// ChatRequest is a model call in the OpenAI Chat Completions shape
// (docs/router.md). The fields the router reads are decoded; every field,
// known or not, is kept as sent in raw, so that an OpenAI-compatible
// provider receives the caller's request unchanged but for the model id.
type ChatRequest struct {
	// Model is the Model the caller names: a Model's name, its route id
	// "<provider>:<model>", or empty (or the agent's name) for the
	// agent's route.
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is "none", "auto", "required" or {"type": "function",
	// "function": {"name"}}, as sent.
	ToolChoice json.RawMessage
	Stream     bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when unset.
	MaxTokens   int64
	Temperature *float64
	TopP        *float64
	Stop        []string
	// ResponseFormat is response_format.type: text, json_object or
	// json_schema; empty when unset.
	ResponseFormat string
	// Execution is Warden's extension field: the execution the call
	// belongs to (the Warden-Execution header may give it instead).
	Execution string

	// raw holds every top-level field as sent, execution removed.
	raw map[string]json.RawMessage
	// promptBytes is the size of the messages and tools as sent.
	promptBytes int
}

// Message is one message of a chat request.
type Message struct {
	Role string `json:"role"`
	// Content is a string, an array of parts or null, as sent.
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ContentPart is one part of a message's content array.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image part's image: a URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ToolCall is a function call of an assistant message or a stream delta.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and carries its arguments as a JSON text.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function tool.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Usage is the token usage of an answer.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// ChatResponse is a non-streamed answer (object "chat.completion").
type ChatResponse struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
}

// Choice is one choice of an answer.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

// ResponseMessage is the assistant's message of a choice.
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChatChunk is one streamed chunk (object "chat.completion.chunk").
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is one choice of a chunk.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
}

// Delta is what a chunk adds to the message.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Limits of a request.
const (
	// maxMessages and maxTools bound a request's lists.
	maxMessages = 10000
	maxTools    = 512
	maxNameLen  = 253
)

func invalid(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeInvalidRequest, format, args...)
}

// DecodeChatRequest parses a Chat Completions request. It refuses, with
// InvalidRequest, a body that is not a JSON object, one without messages,
// and fields of the wrong type; unknown fields are kept for the provider.
func DecodeChatRequest(body []byte) (*ChatRequest, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, invalid(`the body must be a JSON object such as {"model": "…", "messages": [{"role": "user", "content": "Hello"}]}`)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, invalid("the body is not valid JSON: %s", err)
	}
	r := &ChatRequest{raw: raw}
	field := func(name string, v any) error {
		b, ok := raw[name]
		if !ok || bytes.Equal(b, []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(b, v); err != nil {
			return invalid("%s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
		}
		return nil
	}
	var maxTokens, maxCompletion *int64
	var streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	var responseFormat struct {
		Type string `json:"type"`
	}
	var stop json.RawMessage
	for _, f := range []struct {
		name string
		v    any
	}{
		{"model", &r.Model}, {"messages", &r.Messages}, {"tools", &r.Tools}, {"stream", &r.Stream},
		{"stream_options", &streamOptions}, {"max_tokens", &maxTokens}, {"max_completion_tokens", &maxCompletion},
		{"temperature", &r.Temperature}, {"top_p", &r.TopP}, {"response_format", &responseFormat},
		{"execution", &r.Execution}, {"stop", &stop},
	} {
		if err := field(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if tc, ok := raw["tool_choice"]; ok {
		r.ToolChoice = tc
		if err := checkToolChoice(tc); err != nil {
			return nil, err
		}
	}
	delete(raw, "execution")
	r.IncludeUsage = streamOptions.IncludeUsage
	r.ResponseFormat = responseFormat.Type
	switch {
	case maxCompletion != nil:
		r.MaxTokens = *maxCompletion
	case maxTokens != nil:
		r.MaxTokens = *maxTokens
	}
	if len(stop) > 0 && !bytes.Equal(stop, []byte("null")) {
		var one string
		if json.Unmarshal(stop, &one) == nil {
			r.Stop = []string{one}
		} else if err := json.Unmarshal(stop, &r.Stop); err != nil {
			return nil, invalid("stop must be a string or an array of strings")
		}
	}
	switch {
	case len(r.Messages) == 0:
		return nil, invalid("messages must be a non-empty array")
	case len(r.Messages) > maxMessages:
		return nil, invalid("messages has %d items, more than %d", len(r.Messages), maxMessages)
	case len(r.Tools) > maxTools:
		return nil, invalid("tools has %d items, more than %d", len(r.Tools), maxTools)
	case r.MaxTokens < 0:
		return nil, invalid("max_tokens must not be negative")
	case len(r.Model) > maxNameLen || len(r.Execution) > maxNameLen:
		return nil, invalid("model and execution are at most %d characters", maxNameLen)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return nil, invalid("messages[%d].role %q is not system, developer, user, assistant or tool", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return nil, invalid("messages[%d]: a tool message needs tool_call_id", i)
		}
		if c := bytes.TrimSpace(m.Content); len(c) > 0 && c[0] != '"' && c[0] != '[' && !bytes.Equal(c, []byte("null")) {
			return nil, invalid("messages[%d].content must be a string or an array of parts", i)
		}
	}
	for i, t := range r.Tools {
		if t.Type != "function" && t.Type != "" {
			return nil, invalid("tools[%d].type %q is not supported (function)", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, invalid("tools[%d].function.name is required", i)
		}
	}
	r.promptBytes = len(raw["messages"]) + len(raw["tools"])
	return r, nil
}

func checkToolChoice(tc json.RawMessage) error {
	var s string
	if json.Unmarshal(tc, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return nil
		}
		return invalid(`tool_choice %q is not none, auto or required`, s)
	}
	var o struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if bytes.Equal(bytes.TrimSpace(tc), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(tc, &o); err != nil || o.Type != "function" || o.Function.Name == "" {
		return invalid(`tool_choice must be none, auto, required or {"type": "function", "function": {"name": "…"}}`)
	}
	return nil
}

// parts returns a message's content as parts: a string is one text part.
func (m Message) parts() ([]ContentPart, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return nil, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		return []ContentPart{{Type: "text", Text: s}}, nil
	}
	var ps []ContentPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return ps, nil
}

// text returns a message's text parts joined.
func (m Message) text() string {
	ps, _ := m.parts()
	var sb strings.Builder
	for _, p := range ps {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// Needs are the capabilities a request needs of a model.
type Needs struct {
	ToolUse   bool  `json:"toolUse,omitempty"`
	Vision    bool  `json:"vision,omitempty"`
	JSONMode  bool  `json:"jsonMode,omitempty"`
	Streaming bool  `json:"streaming,omitempty"`
	Tokens    int64 `json:"estimatedTokens"`
}

// needs derives what the request needs. Prompt tokens are estimated at
// four bytes of JSON per token (the rule of thumb OpenAI documents),
// plus the answer's max_tokens.
func (r *ChatRequest) needs() Needs {
	n := Needs{ToolUse: len(r.Tools) > 0, Streaming: r.Stream,
		JSONMode: r.ResponseFormat == "json_object" || r.ResponseFormat == "json_schema",
		Tokens:   int64(r.promptBytes/4) + r.MaxTokens}
	for _, m := range r.Messages {
		if len(m.Content) > 0 && m.Content[0] == '[' && bytes.Contains(m.Content, []byte(`"image_url"`)) {
			ps, _ := m.parts()
			for _, p := range ps {
				if p.Type == "image_url" {
					n.Vision = true
				}
			}
		}
	}
	return n
}

// openAIBody renders the request for an OpenAI-compatible provider: the
// caller's fields as sent, model replaced, and usage asked for in a
// stream (the router prices every call; a caller that did not ask for
// the usage chunk does not get it). The fields are written as they are,
// without re-encoding them.
func (r *ChatRequest) openAIBody(model string) ([]byte, error) {
	m, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	size := len(m) + 64
	for k, v := range r.raw {
		size += len(k) + len(v) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, `{"model":`...)
	out = append(out, m...)
	for k, v := range r.raw {
		if k == "model" || (r.Stream && k == "stream_options") {
			continue
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(out, ',')
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, v...)
	}
	if r.Stream {
		so := map[string]json.RawMessage{}
		if b, ok := r.raw["stream_options"]; ok {
			_ = json.Unmarshal(b, &so)
			if so == nil {
				so = map[string]json.RawMessage{}
			}
		}
		so["include_usage"] = json.RawMessage("true")
		b, err := json.Marshal(so)
		if err != nil {
			return nil, err
		}
		out = append(out, `,"stream_options":`...)
		out = append(out, b...)
	}
	return append(out, '}'), nil
}
