package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/upstream"
)

// anthropic calls Anthropic's Messages API, translating the request from
// and the answer (and its stream) to the OpenAI wire format.
type anthropic struct {
	ep    endpoint
	model string
}

// Anthropic's wire types (https://docs.anthropic.com/en/api/messages).
type (
	anthRequest struct {
		Model         string          `json:"model"`
		Messages      []anthMessage   `json:"messages"`
		System        string          `json:"system,omitempty"`
		MaxTokens     int64           `json:"max_tokens"`
		Temperature   *float64        `json:"temperature,omitempty"`
		TopP          *float64        `json:"top_p,omitempty"`
		StopSequences []string        `json:"stop_sequences,omitempty"`
		Stream        bool            `json:"stream,omitempty"`
		Tools         []anthTool      `json:"tools,omitempty"`
		ToolChoice    *anthToolChoice `json:"tool_choice,omitempty"`
	}
	anthMessage struct {
		Role    string      `json:"role"`
		Content []anthBlock `json:"content"`
	}
	anthBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		Source    *anthSource     `json:"source,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   json.RawMessage `json:"content,omitempty"`
		IsError   bool            `json:"is_error,omitempty"`
	}
	anthSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	anthTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	anthToolChoice struct {
		Type string `json:"type"`
		Name string `json:"name,omitempty"`
	}
	anthResponse struct {
		ID           string      `json:"id"`
		Type         string      `json:"type"`
		Role         string      `json:"role"`
		Model        string      `json:"model"`
		Content      []anthBlock `json:"content"`
		StopReason   string      `json:"stop_reason"`
		StopSequence *string     `json:"stop_sequence"`
		Usage        anthUsage   `json:"usage"`
	}
	anthUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitempty"`
	}
)

// defaultAnthropicMaxTokens is max_tokens when the caller sets none
// (Anthropic requires it; OpenAI does not).
const defaultAnthropicMaxTokens = 4096

// toAnthropic translates a Chat Completions request: system and developer
// messages become the system prompt, tool results become tool_result
// blocks of a user turn, assistant tool calls become tool_use blocks,
// images become image blocks, and consecutive turns of one role merge
// (Anthropic alternates user and assistant).
func toAnthropic(req *ChatRequest, model string) (*anthRequest, error) {
	out := &anthRequest{Model: model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP,
		StopSequences: req.Stop, Stream: req.Stream}
	if out.MaxTokens == 0 {
		out.MaxTokens = defaultAnthropicMaxTokens
	}
	var system []string
	add := func(role string, blocks ...anthBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, anthMessage{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, m.text())
		case "tool", "function":
			c, _ := json.Marshal(m.text())
			add("user", anthBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: c})
		case "user", "assistant":
			ps, err := m.parts()
			if err != nil {
				return nil, invalid("messages[%d].%s", i, err)
			}
			var blocks []anthBlock
			for _, p := range ps {
				switch p.Type {
				case "text":
					if p.Text != "" {
						blocks = append(blocks, anthBlock{Type: "text", Text: p.Text})
					}
				case "image_url":
					if p.ImageURL == nil {
						return nil, invalid("messages[%d]: an image_url part needs image_url.url", i)
					}
					blocks = append(blocks, anthBlock{Type: "image", Source: imageSource(p.ImageURL.URL)})
				default:
					return nil, invalid("messages[%d]: content part %q cannot be sent to an Anthropic model", i, p.Type)
				}
			}
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(strings.TrimSpace(tc.Function.Arguments))
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				if !json.Valid(input) {
					return nil, invalid("messages[%d]: tool call %s has arguments that are not JSON", i, tc.ID)
				}
				blocks = append(blocks, anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
			}
			add(m.Role, blocks...)
		}
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := t.Function.Parameters
		if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, anthTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if len(req.ToolChoice) > 0 && !bytes.Equal(req.ToolChoice, []byte("null")) {
		var s string
		if json.Unmarshal(req.ToolChoice, &s) == nil {
			switch s {
			case "auto":
				out.ToolChoice = &anthToolChoice{Type: "auto"}
			case "required":
				out.ToolChoice = &anthToolChoice{Type: "any"}
			case "none":
				// Anthropic's "none" exists, but sending no tools is
				// understood by every version.
				out.ToolChoice = &anthToolChoice{Type: "none"}
			}
		} else {
			var o struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			_ = json.Unmarshal(req.ToolChoice, &o)
			out.ToolChoice = &anthToolChoice{Type: "tool", Name: o.Function.Name}
		}
	}
	return out, nil
}

// imageSource turns an image URL (or a data: URL) into an image source.
func imageSource(u string) *anthSource {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, _ := strings.Cut(rest, ",")
		media, _, _ := strings.Cut(meta, ";")
		return &anthSource{Type: "base64", MediaType: media, Data: data}
	}
	return &anthSource{Type: "url", URL: u}
}

// finishReason maps Anthropic's stop_reason onto OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func (u anthUsage) openAI() Usage {
	in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return Usage{PromptTokens: in, CompletionTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
}

// fromAnthropic translates a Messages answer into a chat completion.
func fromAnthropic(a *anthResponse, created int64) *ChatResponse {
	msg := ResponseMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range a.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Type: "function", Function: FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	u := a.Usage.openAI()
	return &ChatResponse{ID: a.ID, Object: "chat.completion", Created: created, Model: a.Model,
		Choices: []Choice{{Index: 0, Message: msg, FinishReason: finishReason(a.StopReason), Logprobs: json.RawMessage("null")}},
		Usage:   &u}
}

func (p *anthropic) post(ctx context.Context, req *ChatRequest, key string) (*http.Response, error) {
	ar, err := toAnthropic(req, p.model)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(ar)
	if err != nil {
		return nil, err
	}
	hdrs := make([]upstream.Header, 0, 3)
	hdrs = append(hdrs, upstream.Header{Name: "anthropic-version", Value: anthropicVersion})
	if key != "" {
		hdrs = append(hdrs, upstream.Header{Name: "x-api-key", Value: key})
	}
	if req.Stream {
		hdrs = append(hdrs, upstream.Header{Name: "Accept", Value: "text/event-stream"})
	}
	return p.ep.post(ctx, body, hdrs)
}

func (p *anthropic) chat(ctx context.Context, req *ChatRequest, key string) (*Answer, error) {
	resp, err := p.post(ctx, req, key)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	var a anthResponse
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, &ProviderError{Status: http.StatusBadGateway, Message: "the provider's answer is not a Messages answer"}
	}
	cr := fromAnthropic(&a, time.Now().Unix())
	out, err := json.Marshal(cr)
	if err != nil {
		return nil, err
	}
	return &Answer{Body: out, Usage: *cr.Usage}, nil
}

func (p *anthropic) embed(context.Context, []byte, string) (*Answer, error) {
	return nil, errNoEmbeddings
}

// errNoEmbeddings is the answer of a provider without an embeddings API.
var errNoEmbeddings = errors.New("the provider has no embeddings API")

func (p *anthropic) stream(ctx context.Context, req *ChatRequest, key string) (Stream, error) {
	resp, err := p.post(ctx, req, key)
	if err != nil {
		return nil, err
	}
	return &anthStream{ctx: ctx, sse: newSSEReader(resp.Body), tools: map[int]int{}, created: time.Now().Unix()}, nil
}

// anthStream translates Anthropic's stream events into OpenAI chunks.
type anthStream struct {
	ctx     context.Context
	sse     *sseReader
	id      string
	model   string
	created int64
	usage   anthUsage
	// tools maps a content block index to its tool call index.
	tools map[int]int
	done  bool
}

func (s *anthStream) chunk(d Delta, finish *string, usage *Usage) ([]byte, error) {
	c := ChatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model, Choices: []ChunkChoice{}, Usage: usage}
	if usage == nil {
		c.Choices = []ChunkChoice{{Index: 0, Delta: d, FinishReason: finish}}
	}
	return json.Marshal(c)
}

func (s *anthStream) Next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	for {
		event, data, err := s.sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, &ProviderError{Transport: "stream ended before message_stop"}
			}
			return nil, transportError(s.ctx, err)
		}
		var ev struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				ID    string    `json:"id"`
				Model string    `json:"model"`
				Usage anthUsage `json:"usage"`
			} `json:"message"`
			ContentBlock anthBlock `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage *anthUsage `json:"usage"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, &ProviderError{Status: http.StatusBadGateway, Message: fmt.Sprintf("event %q is not JSON", event)}
		}
		switch ev.Type {
		case "message_start":
			s.id, s.model, s.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
			empty := ""
			return s.chunk(Delta{Role: "assistant", Content: &empty}, nil, nil)
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				i := len(s.tools)
				s.tools[ev.Index] = i
				return s.chunk(Delta{ToolCalls: []ToolCall{{Index: &i, ID: ev.ContentBlock.ID, Type: "function",
					Function: FunctionCall{Name: ev.ContentBlock.Name}}}}, nil, nil)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				t := ev.Delta.Text
				return s.chunk(Delta{Content: &t}, nil, nil)
			case "input_json_delta":
				i := s.tools[ev.Index]
				return s.chunk(Delta{ToolCalls: []ToolCall{{Index: &i, Function: FunctionCall{Arguments: ev.Delta.PartialJSON}}}}, nil, nil)
			}
		case "message_delta":
			if ev.Usage != nil {
				s.usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 {
					s.usage.InputTokens = ev.Usage.InputTokens
				}
			}
			if ev.Delta.StopReason != "" {
				f := finishReason(ev.Delta.StopReason)
				return s.chunk(Delta{}, &f, nil)
			}
		case "message_stop":
			s.done = true
			u := s.usage.openAI()
			return s.chunk(Delta{}, nil, &u)
		case "error":
			status := http.StatusBadGateway
			if ev.Error.Type == "overloaded_error" {
				status = 529
			}
			return nil, &ProviderError{Status: status, Type: ev.Error.Type, Message: ev.Error.Message}
		}
	}
}

func (s *anthStream) Close() error { return s.sse.Close() }
