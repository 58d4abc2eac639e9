package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/warden-dev/warden/app/upstream"
)

// openAI calls an OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM,
// Ollama, LM Studio, Groq, Together …): the caller's request goes out as
// sent with the Model's id, and the answer comes back as it is.
type openAI struct {
	model           string
	chatEP, embedEP endpoint
	// azure authenticates with the api-key header.
	azure bool
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func (p *openAI) post(ctx context.Context, ep endpoint, body []byte, key string, stream bool) (*http.Response, error) {
	hdrs := make([]upstream.Header, 0, 2)
	if stream {
		hdrs = append(hdrs, upstream.Header{Name: "Accept", Value: "text/event-stream"})
	}
	if key != "" {
		if p.azure {
			hdrs = append(hdrs, upstream.Header{Name: "api-key", Value: key})
		} else {
			hdrs = append(hdrs, upstream.Header{Name: "Authorization", Value: "Bearer " + key})
		}
	}
	return ep.post(ctx, body, hdrs)
}

func (p *openAI) chat(ctx context.Context, req *ChatRequest, key string) (*Answer, error) {
	body, err := req.openAIBody(p.model)
	if err != nil {
		return nil, err
	}
	resp, err := p.post(ctx, p.chatEP, body, key, false)
	if err != nil {
		return nil, err
	}
	return readAnswer(ctx, resp)
}

func (p *openAI) embed(ctx context.Context, body []byte, key string) (*Answer, error) {
	resp, err := p.post(ctx, p.embedEP, body, key, false)
	if err != nil {
		return nil, err
	}
	return readAnswer(ctx, resp)
}

// readAnswer reads a non-streamed answer and its usage.
func readAnswer(ctx context.Context, resp *http.Response) (*Answer, error) {
	defer resp.Body.Close()
	var b []byte
	var err error
	if n := resp.ContentLength; n >= 0 && n <= maxAnswerBytes {
		// One allocation of the announced size rather than a growing
		// buffer.
		b = make([]byte, n)
		_, err = io.ReadFull(resp.Body, b)
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	}
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if len(b) > maxAnswerBytes {
		return nil, &ProviderError{Status: http.StatusBadGateway, Message: "the provider's answer is larger than the router's limit"}
	}
	a := &Answer{Body: b}
	u, err := answerUsage(b)
	if err != nil {
		return nil, &ProviderError{Status: http.StatusBadGateway, Message: "the provider's answer is not JSON"}
	}
	a.Usage = u
	return a, nil
}

// answerUsage reads the usage of an answer. The answer is checked to be
// JSON and forwarded as it is, so only its usage object is decoded: the
// last "usage" key (OpenAI writes it last; a "usage" inside the content
// comes earlier, and a decoding that fails falls back to the whole
// answer).
func answerUsage(b []byte) (Usage, error) {
	if !json.Valid(b) {
		return Usage{}, errors.New("not JSON")
	}
	var u Usage
	if i := bytes.LastIndex(b, []byte(`"usage"`)); i >= 0 {
		rest := bytes.TrimLeft(b[i+len(`"usage"`):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&u) == nil {
				return u, nil
			}
		}
	}
	var whole struct {
		Usage *Usage `json:"usage"`
	}
	if err := json.Unmarshal(b, &whole); err != nil {
		return Usage{}, err
	}
	if whole.Usage != nil {
		u = *whole.Usage
	}
	return u, nil
}

// maxAnswerBytes bounds a non-streamed answer.
const maxAnswerBytes = 64 << 20

func (p *openAI) stream(ctx context.Context, req *ChatRequest, key string) (Stream, error) {
	body, err := req.openAIBody(p.model)
	if err != nil {
		return nil, err
	}
	resp, err := p.post(ctx, p.chatEP, body, key, true)
	if err != nil {
		return nil, err
	}
	return &openAIStream{ctx: ctx, sse: newSSEReader(resp.Body)}, nil
}

// openAIStream passes an OpenAI stream's chunks through as they are.
type openAIStream struct {
	ctx context.Context
	sse *sseReader
}

func (s *openAIStream) Next() ([]byte, error) {
	for {
		_, data, err := s.sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A stream that ends without [DONE] was cut off.
				return nil, &ProviderError{Transport: "stream ended before [DONE]"}
			}
			return nil, transportError(s.ctx, err)
		}
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			return nil, io.EOF
		}
		if bytes.HasPrefix(data, []byte(`{"error"`)) {
			typ, msg := errorFields(data)
			return nil, &ProviderError{Status: http.StatusBadGateway, Type: typ, Message: msg}
		}
		return data, nil
	}
}

func (s *openAIStream) Close() error { return s.sse.Close() }
