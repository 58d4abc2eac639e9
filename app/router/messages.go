package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
)

// The Anthropic Messages wire format on POST /v1/messages: the request is
// translated into a chat request, routed like any other, and the answer
// (or its stream) translated back, whatever provider answered.

// anthInbound is a Messages request as a caller sends it.
type anthInbound struct {
	Model         string          `json:"model"`
	Messages      []anthInMessage `json:"messages"`
	System        json.RawMessage `json:"system"`
	MaxTokens     int64           `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Tools         []anthTool      `json:"tools"`
	ToolChoice    *anthToolChoice `json:"tool_choice"`
	Metadata      map[string]any  `json:"metadata"`
	Execution     string          `json:"execution"`
}

type anthInMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// blocks reads content that is a string or an array of blocks.
func blocks(raw json.RawMessage) ([]anthBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

func blockText(raw json.RawMessage) string {
	bs, _ := blocks(raw)
	var sb strings.Builder
	for _, b := range bs {
		if b.Type == "text" {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// DecodeMessagesRequest parses an Anthropic Messages request into a chat
// request.
func DecodeMessagesRequest(body []byte) (*ChatRequest, error) {
	var in anthInbound
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, invalid("the body is not a Messages request: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(in.Messages) == 0 {
		return nil, invalid("messages must be a non-empty array")
	}
	if in.MaxTokens <= 0 {
		return nil, invalid("max_tokens is required and must be positive")
	}
	type msg = map[string]any
	var out []msg
	if sys := blockText(in.System); sys != "" {
		out = append(out, msg{"role": "system", "content": sys})
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, invalid("messages[%d].role %q is not user or assistant", i, m.Role)
		}
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, invalid("messages[%d].content must be a string or an array of content blocks", i)
		}
		var parts []msg
		var calls []msg
		var text strings.Builder
		for _, b := range bs {
			switch b.Type {
			case "text":
				parts = append(parts, msg{"type": "text", "text": b.Text})
				text.WriteString(b.Text)
			case "image":
				if b.Source == nil {
					return nil, invalid("messages[%d]: an image block needs a source", i)
				}
				u := b.Source.URL
				if b.Source.Type == "base64" {
					u = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
				}
				parts = append(parts, msg{"type": "image_url", "image_url": msg{"url": u}})
			case "tool_use":
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, msg{"id": b.ID, "type": "function", "function": msg{"name": b.Name, "arguments": args}})
			case "tool_result":
				content := blockText(b.Content)
				if b.IsError {
					content = "error: " + content
				}
				out = append(out, msg{"role": "tool", "tool_call_id": b.ToolUseID, "content": content})
			case "thinking", "redacted_thinking":
			default:
				return nil, invalid("messages[%d]: content block %q is not supported", i, b.Type)
			}
		}
		switch {
		case m.Role == "assistant":
			am := msg{"role": "assistant"}
			if text.Len() > 0 || len(calls) == 0 {
				am["content"] = text.String()
			}
			if len(calls) > 0 {
				am["tool_calls"] = calls
			}
			out = append(out, am)
		case len(parts) > 0 && text.Len() > 0 && len(parts) == countText(parts):
			// Text alone goes as a string, which every OpenAI-compatible
			// server reads (not all take content parts).
			out = append(out, msg{"role": "user", "content": text.String()})
		case len(parts) > 0:
			out = append(out, msg{"role": "user", "content": parts})
		}
	}
	req := map[string]any{"model": in.Model, "messages": out, "max_tokens": in.MaxTokens, "stream": in.Stream}
	if in.Stream {
		req["stream_options"] = msg{"include_usage": true}
	}
	if in.Temperature != nil {
		req["temperature"] = *in.Temperature
	}
	if in.TopP != nil {
		req["top_p"] = *in.TopP
	}
	if len(in.StopSequences) > 0 {
		req["stop"] = in.StopSequences
	}
	if in.Execution != "" {
		req["execution"] = in.Execution
	}
	if len(in.Tools) > 0 {
		var tools []msg
		for _, t := range in.Tools {
			fn := msg{"name": t.Name, "description": t.Description}
			if len(t.InputSchema) > 0 {
				fn["parameters"] = t.InputSchema
			}
			tools = append(tools, msg{"type": "function", "function": fn})
		}
		req["tools"] = tools
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			req["tool_choice"] = "auto"
		case "any":
			req["tool_choice"] = "required"
		case "none":
			req["tool_choice"] = "none"
		case "tool":
			req["tool_choice"] = msg{"type": "function", "function": msg{"name": tc.Name}}
		}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, invalid("%s", err)
	}
	return DecodeChatRequest(b)
}

func (r *Router) handleMessages(w *reply) {
	resp := &anthropicResponder{}
	body, e := r.readBody(w)
	if e != nil {
		resp.fail(w, e)
		return
	}
	req, err := DecodeMessagesRequest(body)
	if err != nil {
		resp.fail(w, asAPIError(err))
		return
	}
	resp.model = req.Model
	r.chat(w, req, resp)
}

// stopReason maps OpenAI's finish_reason onto Anthropic's stop_reason.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// anthropicResponder writes the Anthropic Messages wire format.
type anthropicResponder struct {
	model string
	// stream state
	started bool
	id      string
	index   int
	open    string // "", "text" or "tool_use"
	stop    string
	usage   Usage
}

func (a *anthropicResponder) answer(w *reply, body []byte) error {
	var cr ChatResponse
	if err := json.Unmarshal(body, &cr); err != nil || len(cr.Choices) == 0 {
		writeAnthError(w, apierr.New(apierr.CodeUnavailable, "the provider's answer has no choices"))
		return nil
	}
	ch := cr.Choices[0]
	content := []map[string]any{}
	if ch.Message.Content != nil && *ch.Message.Content != "" {
		content = append(content, map[string]any{"type": "text", "text": *ch.Message.Content})
	}
	for _, tc := range ch.Message.ToolCalls {
		var input any = map[string]any{}
		if tc.Function.Arguments != "" {
			_ = json.Unmarshal([]byte(tc.Function.Arguments), &input)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": input})
	}
	var u Usage
	if cr.Usage != nil {
		u = *cr.Usage
	}
	out := map[string]any{"id": cr.ID, "type": "message", "role": "assistant", "model": cr.Model, "content": content,
		"stop_reason": stopReason(ch.FinishReason), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens}}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	w.set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	_, err = w.Write(b)
	return err
}

func (a *anthropicResponder) begin(w *reply) { beginSSE(w) }

func (a *anthropicResponder) emit(w *reply, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	return nil
}

func (a *anthropicResponder) closeBlock(w *reply) error {
	if a.open == "" {
		return nil
	}
	a.open = ""
	err := a.emit(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": a.index})
	a.index++
	return err
}

func (a *anthropicResponder) chunk(w *reply, data []byte) error {
	var c ChatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil
	}
	if !a.started {
		a.started, a.id = true, c.ID
		if c.Model != "" {
			a.model = c.Model
		}
		if err := a.emit(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": c.ID, "type": "message", "role": "assistant", "model": a.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}}); err != nil {
			return err
		}
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
	for _, ch := range c.Choices {
		if d := ch.Delta.Content; d != nil && *d != "" {
			if a.open != "text" {
				if err := a.closeBlock(w); err != nil {
					return err
				}
				a.open = "text"
				if err := a.emit(w, "content_block_start", map[string]any{"type": "content_block_start", "index": a.index,
					"content_block": map[string]any{"type": "text", "text": ""}}); err != nil {
					return err
				}
			}
			if err := a.emit(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": a.index,
				"delta": map[string]any{"type": "text_delta", "text": *d}}); err != nil {
				return err
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" {
				if err := a.closeBlock(w); err != nil {
					return err
				}
				a.open = "tool_use"
				if err := a.emit(w, "content_block_start", map[string]any{"type": "content_block_start", "index": a.index,
					"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": map[string]any{}}}); err != nil {
					return err
				}
			}
			if tc.Function.Arguments != "" && a.open == "tool_use" {
				if err := a.emit(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": a.index,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Function.Arguments}}); err != nil {
					return err
				}
			}
		}
		if ch.FinishReason != nil {
			a.stop = stopReason(*ch.FinishReason)
		}
	}
	return nil
}

func (a *anthropicResponder) end(w *reply, u Usage) error {
	if u.TotalTokens > 0 {
		a.usage = u
	}
	if err := a.closeBlock(w); err != nil {
		return err
	}
	if a.stop == "" {
		a.stop = "end_turn"
	}
	if err := a.emit(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": a.usage.PromptTokens, "output_tokens": a.usage.CompletionTokens}}); err != nil {
		return err
	}
	if err := a.emit(w, "message_stop", map[string]any{"type": "message_stop"}); err != nil {
		return err
	}
	return nil
}

func (a *anthropicResponder) streamError(w *reply, e *apierr.Error) error {
	_ = a.emit(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": anthErrorType(e.Code), "message": e.Message}})
	return nil
}

func (a *anthropicResponder) fail(w *reply, e *apierr.Error) { writeAnthError(w, e) }

// writeAnthError writes Anthropic's error body, {"type": "error",
// "error": {"type", "message"}}, with the router's code beside them.
func writeAnthError(w *reply, e *apierr.Error) {
	if s, ok := e.Details["retryAfterSeconds"].(int64); ok {
		w.set(fiber.HeaderRetryAfter, fmt.Sprint(s))
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": anthErrorType(e.Code), "message": e.Message,
		"code": e.Code, "details": e.Details}})
	w.set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	w.status(e.Status())
	_, _ = w.Write(b)
}

func anthErrorType(code string) string {
	switch code {
	case apierr.CodeInvalidRequest, apierr.CodePayloadTooLarge:
		return "invalid_request_error"
	case apierr.CodeNotFound:
		return "not_found_error"
	case apierr.CodeUnauthenticated:
		return "authentication_error"
	case apierr.CodeForbidden, apierr.CodePolicyDenied:
		return "permission_error"
	case apierr.CodeRateLimited, apierr.CodeBudgetExceeded:
		return "rate_limit_error"
	case apierr.CodeUnavailable:
		return "overloaded_error"
	}
	return "api_error"
}

func sortModels(ms []*modelEntry) {
	slices.SortFunc(ms, func(a, b *modelEntry) int { return strings.Compare(a.name, b.name) })
}

// countText counts the text parts.
func countText(parts []map[string]any) int {
	n := 0
	for _, p := range parts {
		if p["type"] == "text" {
			n++
		}
	}
	return n
}
