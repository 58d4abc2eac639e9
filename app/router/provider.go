package router

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/upstream"
)

// Provider ids with their own wire format or defaults; any other provider
// is OpenAI-compatible at the Model's spec.endpoint.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderAzure     = "azure"
)

// Default base URLs.
const (
	openAIBaseURL    = "https://api.openai.com/v1"
	anthropicBaseURL = "https://api.anthropic.com/v1"
	anthropicVersion = "2023-06-01"
)

// Answer is a provider's non-streamed answer in the OpenAI wire format.
type Answer struct {
	// Body is the answer as the caller receives it.
	Body  []byte
	Usage Usage
}

// Stream is a provider's streamed answer, as OpenAI chunks.
type Stream interface {
	// Next returns the next chunk's JSON; io.EOF after the last one, a
	// *ProviderError when the provider failed.
	Next() ([]byte, error)
	Close() error
}

// provider calls one Model.
type provider interface {
	chat(ctx context.Context, req *ChatRequest, key string) (*Answer, error)
	stream(ctx context.Context, req *ChatRequest, key string) (Stream, error)
	embed(ctx context.Context, body []byte, key string) (*Answer, error)
}

// ProviderError is a failed provider call: an HTTP error answer (Status),
// a transport failure (Transport) or an error event in a stream.
type ProviderError struct {
	// Status is the provider's HTTP status; 0 for a transport failure.
	Status int
	// Type is the provider's error type (rate_limit_error, …).
	Type string
	// Message is the provider's message.
	Message string
	// RetryAfter is the provider's retry-after header.
	RetryAfter string
	// Transport says what failed below HTTP: timeout, refused, reset,
	// dns or the error text.
	Transport string
}

func (e *ProviderError) Error() string {
	if e.Status == 0 {
		return "provider unreachable: " + e.Transport
	}
	if e.Message == "" {
		return fmt.Sprintf("provider answered %d", e.Status)
	}
	return fmt.Sprintf("provider answered %d: %s", e.Status, e.Message)
}

// switchable reports whether the next candidate should be tried: rate
// limiting, overload and server errors, timeouts and unreachable
// providers, and the Model's own credentials (401, 403), which are not
// the caller's fault. Any other 4xx is the caller's and is answered.
func (e *ProviderError) switchable() bool {
	switch {
	case e.Status == 0:
		return true
	case e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout,
		e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden:
		return true
	case e.Status >= 500:
		return true
	}
	return false
}

// reason is the short form recorded in a decision.
func (e *ProviderError) reason() string {
	switch {
	case e.Status == 0:
		return e.Transport
	case e.Status == http.StatusTooManyRequests:
		return "rate limited (429)"
	}
	return fmt.Sprintf("status %d", e.Status)
}

// transportError classifies a failed round trip.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) && context.Cause(ctx) == context.Canceled {
		return err
	}
	what := err.Error()
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		what = "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		what = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		what = "connection reset"
	default:
		var dns *net.DNSError
		if errors.As(err, &dns) {
			what = "dns: " + dns.Err
		}
	}
	return &ProviderError{Transport: what}
}

// NewTransport returns the pooled HTTP transport of provider calls: many
// idle connections per provider (a busy router reuses them instead of
// dialling), no transparent compression (a stream must not wait for a
// gzip block) and HTTP/2 where the provider offers it.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       32 << 10,
		ReadBufferSize:        32 << 10,
	}
}

// endpoint is one URL of a provider: a plain-HTTP URL is called over the
// router's own connections (app/upstream), any other through net/http.
type endpoint struct {
	url string
	hc  *http.Client
	// up is the connection pool of a plain-HTTP URL, nil for net/http;
	// uri is the request target on it.
	up  *upstream.Pool
	uri string
}

func newEndpoint(hc *http.Client, ups *upstream.Pools, raw string) endpoint {
	e := endpoint{url: raw, hc: hc}
	if ups != nil {
		e.up, e.uri, _ = ups.For(raw)
	}
	return e
}

// post sends a JSON body with the given headers and returns a 2xx answer;
// any other is a *ProviderError, as is a failed round trip.
func (e endpoint) post(ctx context.Context, body []byte, hdrs []upstream.Header) (*http.Response, error) {
	var resp *http.Response
	var err error
	if e.up != nil {
		resp, err = e.up.Post(ctx, e.uri, body, hdrs)
	} else {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body)); err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for _, h := range hdrs {
			req.Header.Set(h.Name, h.Value)
		}
		resp, err = e.hc.Do(req)
	}
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorAnswer(resp)
	}
	return resp, nil
}

// newProvider builds the provider of a Model.
func newProvider(hc *http.Client, ups *upstream.Pools, spec resource.ModelSpec) (provider, error) {
	base := strings.TrimSuffix(spec.Endpoint, "/")
	switch spec.Provider {
	case ProviderAnthropic:
		if base == "" {
			base = anthropicBaseURL
		}
		return &anthropic{ep: newEndpoint(hc, ups, base+"/messages"), model: spec.Model}, nil
	case ProviderOpenAI:
		if base == "" {
			base = openAIBaseURL
		}
	case ProviderAzure:
		// https://{resource}.openai.azure.com/openai/deployments/{deployment}?api-version=…
		u, err := url.Parse(spec.Endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("azure needs spec.endpoint https://{resource}.openai.azure.com/openai/deployments/{deployment}?api-version=…")
		}
		return &openAI{model: spec.Model, azure: true,
			chatEP: newEndpoint(hc, ups, withPath(u, "/chat/completions")), embedEP: newEndpoint(hc, ups, withPath(u, "/embeddings"))}, nil
	default:
		if base == "" {
			return nil, fmt.Errorf("provider %q is OpenAI-compatible and needs spec.endpoint (its base URL, such as http://localhost:11434/v1)", spec.Provider)
		}
	}
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("spec.endpoint: %w", err)
	}
	return &openAI{model: spec.Model, chatEP: newEndpoint(hc, ups, base+"/chat/completions"), embedEP: newEndpoint(hc, ups, base+"/embeddings")}, nil
}

func withPath(u *url.URL, p string) string {
	c := *u
	c.Path = strings.TrimSuffix(c.Path, "/") + p
	return c.String()
}

// errorAnswer reads a provider's error answer in either wire format:
// OpenAI {"error": {"message", "type"}} or Anthropic {"type": "error",
// "error": {"type", "message"}}.
func errorAnswer(resp *http.Response) *ProviderError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &ProviderError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	e.Type, e.Message = errorFields(b)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// Providers quote the key they refused (partly masked, as
		// OpenAI's "Incorrect API key provided: sk-ab…yz"): the message
		// may reach the agent, the key must not.
		e.Message = fmt.Sprintf("the provider refused the Model's credentials (HTTP %d)", resp.StatusCode)
	case e.Message == "":
		e.Message = strings.TrimSpace(string(b[:min(len(b), 200)]))
	}
	return e
}

func errorFields(b []byte) (typ, msg string) {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if unmarshal(b, &body) == nil {
		return body.Error.Type, body.Error.Message
	}
	return "", ""
}

// retryAfterSeconds parses a retry-after header (seconds or an HTTP date).
func retryAfterSeconds(v string, now time.Time) int64 {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s >= 0 {
		return s
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return int64(t.Sub(now).Seconds()) + 1
	}
	return 0
}

// sseReader reads server-sent events.
type sseReader struct {
	r    *bufio.Reader
	body io.ReadCloser
	data bytes.Buffer
}

func newSSEReader(body io.ReadCloser) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(body, 16<<10), body: body}
}

// next returns the next event's name and data (several data lines joined
// by newlines). The data is valid until the next call.
func (s *sseReader) next() (event string, data []byte, err error) {
	s.data.Reset()
	has := false
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = s.r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (has || event != "") {
				return event, s.data.Bytes(), nil
			}
			return "", nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if has || event != "" {
				return event, s.data.Bytes(), nil
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			if has {
				s.data.WriteByte('\n')
			}
			s.data.Write(value)
			has = true
		}
	}
}

func (s *sseReader) Close() error { return s.body.Close() }
