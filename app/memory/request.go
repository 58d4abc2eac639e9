package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Limits of a request.
const (
	// MaxTextBytes bounds an item's text.
	MaxTextBytes = 64 << 10
	// MaxMetadataBytes bounds an item's metadata, encoded as JSON.
	MaxMetadataBytes = 16 << 10
	// MaxFilterKeys bounds a query's metadata filter.
	MaxFilterKeys = 16
	// MaxQueryBytes bounds a query's text.
	MaxQueryBytes = 4 << 10
	// DefaultLimit and MaxLimit bound the items a query answers.
	DefaultLimit = 10
	MaxLimit     = 1000
	// maxConversation bounds a conversation id.
	maxConversation = 253
)

// Scope names the agent and conversation of an item. A workload's agent
// comes from its credential; a person names it here.
type Scope struct {
	Agent        string `json:"agent,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// WriteRequest is the body of POST /v1/memory/{name}/write and
// /v1/memory/write (which names the memory in the body).
type WriteRequest struct {
	// Memory names the Memory on /v1/memory/write.
	Memory   string         `json:"memory,omitempty"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Scope    Scope          `json:"scope,omitzero"`
	// TTL is a Go duration; the Memory's spec.ttl bounds it.
	TTL string `json:"ttl,omitempty"`

	ttl time.Duration
}

// QueryRequest is the body of POST /v1/memory/{name}/query and
// /v1/memory/query.
type QueryRequest struct {
	Memory string `json:"memory,omitempty"`
	// Text ranks the items by lexical relevance; empty answers the newest.
	Text string `json:"text,omitempty"`
	// Metadata keeps the items whose metadata has each key with exactly
	// this value (a string, number or boolean).
	Metadata map[string]any `json:"metadata,omitempty"`
	Scope    Scope          `json:"scope,omitzero"`
	// Since keeps the items written at or after it: an RFC 3339 time, or
	// a Go duration meaning that long ago.
	Since string `json:"since,omitempty"`
	// Limit is the most items answered; default 10, at most 1000.
	Limit int `json:"limit,omitempty"`
	// IncludeSummarized also answers items compacted into a summary.
	IncludeSummarized bool `json:"includeSummarized,omitempty"`

	since    time.Time
	sinceAgo time.Duration
}

// SummarizeRequest is the body of POST /v1/memory/{name}/summarize; every
// field is optional.
type SummarizeRequest struct {
	Scope Scope `json:"scope,omitzero"`
	// KeepRecent overrides spec.summarize.keepRecent.
	KeepRecent *int `json:"keepRecent,omitempty"`
	// OlderThan compacts only items older than this Go duration.
	OlderThan string `json:"olderThan,omitempty"`

	olderThan time.Duration
}

func invalid(format string, args ...any) error {
	return apierr.New(apierr.CodeInvalidRequest, format, args...)
}

// decodeStrict decodes one JSON object into v, refusing unknown fields
// and trailing data. An empty body decodes as {}.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("the body is not a valid request: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("the body has data after its JSON object")
	}
	return nil
}

// memoryName picks the memory from the path or the body.
func memoryName(path, body string) (string, error) {
	switch {
	case path != "" && body != "" && path != body:
		return "", invalid("the body names memory %q, the path %q", body, path)
	case path != "":
		body = path
	case body == "":
		return "", invalid("memory is required: name it in the path (/v1/memory/{name}/…) or the body")
	}
	if !resource.IsDNS1123Label(body) {
		return "", invalid("memory %q is not a DNS-1123 label", body)
	}
	return body, nil
}

func checkScope(s Scope) error {
	if s.Agent != "" && !resource.IsDNS1123Label(s.Agent) {
		return invalid("scope.agent %q is not a DNS-1123 label", s.Agent)
	}
	if len(s.Conversation) > maxConversation || !utf8.ValidString(s.Conversation) || strings.ContainsFunc(s.Conversation, isControl) {
		return invalid("scope.conversation must be at most %d characters without control characters", maxConversation)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// ParseWriteRequest decodes and checks a write body; pathMemory is the
// memory the path names ("" on /v1/memory/write).
func ParseWriteRequest(body []byte, pathMemory string) (WriteRequest, error) {
	var r WriteRequest
	if err := decodeStrict(body, &r); err != nil {
		return r, err
	}
	var err error
	if r.Memory, err = memoryName(pathMemory, r.Memory); err != nil {
		return r, err
	}
	switch {
	case strings.TrimSpace(r.Text) == "":
		return r, invalid("text is required")
	case len(r.Text) > MaxTextBytes:
		return r, invalid("text is longer than %d bytes", MaxTextBytes)
	case !utf8.ValidString(r.Text):
		return r, invalid("text is not valid UTF-8")
	}
	if r.Metadata != nil {
		b, err := json.Marshal(r.Metadata)
		if err != nil {
			return r, invalid("metadata: %s", err.Error())
		}
		if len(b) > MaxMetadataBytes {
			return r, invalid("metadata is larger than %d bytes as JSON", MaxMetadataBytes)
		}
	}
	if err := checkScope(r.Scope); err != nil {
		return r, err
	}
	if r.TTL != "" {
		d, err := time.ParseDuration(r.TTL)
		if err != nil || d <= 0 {
			return r, invalid("ttl %q is not a positive duration such as 10m or 24h", r.TTL)
		}
		r.ttl = d
	}
	return r, nil
}

// ParseQueryRequest decodes and checks a query body.
func ParseQueryRequest(body []byte, pathMemory string) (QueryRequest, error) {
	var r QueryRequest
	if err := decodeStrict(body, &r); err != nil {
		return r, err
	}
	var err error
	if r.Memory, err = memoryName(pathMemory, r.Memory); err != nil {
		return r, err
	}
	if len(r.Text) > MaxQueryBytes || !utf8.ValidString(r.Text) {
		return r, invalid("text must be valid UTF-8 of at most %d bytes", MaxQueryBytes)
	}
	if len(r.Metadata) > MaxFilterKeys {
		return r, invalid("metadata filters at most %d keys", MaxFilterKeys)
	}
	for k, v := range r.Metadata {
		if !store.ValidMetadataFilterKey(k) {
			return r, invalid("metadata filter key %q must be 1-128 letters, digits, '_', '.' or '-'", k)
		}
		switch v.(type) {
		case string, float64, bool:
		default:
			return r, invalid("metadata filter %q must be a string, number or boolean", k)
		}
	}
	if err := checkScope(r.Scope); err != nil {
		return r, err
	}
	switch {
	case r.Limit < 0 || r.Limit > MaxLimit:
		return r, invalid("limit must be between 1 and %d", MaxLimit)
	case r.Limit == 0:
		r.Limit = DefaultLimit
	}
	if r.Since != "" {
		if t, err := time.Parse(time.RFC3339Nano, r.Since); err == nil {
			r.since = t
		} else if d, err := time.ParseDuration(r.Since); err == nil && d > 0 {
			r.sinceAgo = d
		} else {
			return r, invalid("since %q is neither an RFC 3339 time nor a positive duration such as 1h", r.Since)
		}
	}
	return r, nil
}

// ParseSummarizeRequest decodes and checks a summarize body.
func ParseSummarizeRequest(body []byte) (SummarizeRequest, error) {
	var r SummarizeRequest
	if err := decodeStrict(body, &r); err != nil {
		return r, err
	}
	if err := checkScope(r.Scope); err != nil {
		return r, err
	}
	if r.KeepRecent != nil && *r.KeepRecent < 0 {
		return r, invalid("keepRecent must not be negative")
	}
	if r.OlderThan != "" {
		d, err := time.ParseDuration(r.OlderThan)
		if err != nil || d < 0 {
			return r, invalid("olderThan %q is not a duration such as 24h", r.OlderThan)
		}
		r.olderThan = d
	}
	return r, nil
}

// sinceAt is the query's lower time bound at now.
func (r QueryRequest) sinceAt(now time.Time) time.Time {
	if r.sinceAgo > 0 {
		return now.Add(-r.sinceAgo)
	}
	return r.since
}
