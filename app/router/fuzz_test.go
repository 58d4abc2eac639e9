package router

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

var chatSeeds = []string{
	`{"model":"bot","messages":[{"role":"user","content":"Hello"}]}`,
	`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
	`{"messages":[{"role":"user","content":"x"}],"stop":["a","b"],"response_format":{"type":"json_object"},"temperature":0.5,"execution":"ex-1"}`,
	`{"messages":[]}`, `[]`, `{"messages":[{"role":"robot"}]}`, `{"messages":[{"role":"user","content":5}]}`, ``,
}

// FuzzDecodeChatRequest: the parser never panics; what it accepts
// derives its needs, renders for an OpenAI-compatible provider as JSON
// and translates for Anthropic or refuses with an error.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range chatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChatRequest(body)
		if err != nil {
			return
		}
		if len(req.Messages) == 0 {
			t.Fatal("accepted a request without messages")
		}
		_ = req.needs()
		b, err := req.openAIBody("m")
		if err != nil || !json.Valid(b) {
			t.Fatalf("openAIBody: %v", err)
		}
		if _, ok := req.raw["execution"]; ok {
			t.Fatal("execution kept for the provider")
		}
		if ar, err := toAnthropic(req, "m"); err == nil {
			if _, err := json.Marshal(ar); err != nil {
				t.Fatalf("anthropic request does not encode: %v", err)
			}
		}
	})
}

// FuzzDecodeMessagesRequest: the Anthropic-format parser never panics and
// what it accepts is a valid chat request.
func FuzzDecodeMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"bot","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`,
		`{"max_tokens":64,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}],"is_error":true}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`,
		`{"max_tokens":0,"messages":[]}`, `{"messages":"x"}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeMessagesRequest(body)
		if err != nil {
			return
		}
		if req.MaxTokens <= 0 {
			t.Fatal("accepted a request without max_tokens")
		}
	})
}

// FuzzSSE: the event reader never panics on any stream.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: x\r\ndata: y\r\n\r\n: comment\n\nevent: e"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newSSEReader(io.NopCloser(bytes.NewReader(b)))
		for range 1000 {
			if _, _, err := r.next(); err != nil {
				return
			}
		}
	})
}
