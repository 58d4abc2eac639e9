package aos_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

// guardianServer starts a Guardian Agent that checks every request it gets
// with aos.Decode (so Warden's requests are valid AOS) and answers with
// answer. It counts the requests.
func guardianServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, req *aos.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		req, e := aos.Decode(body)
		if e != nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(aos.ErrorResponse(nil, e))
			return
		}
		answer(w, r, req)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// decide answers with a decision.
func decide(d aos.Decision) func(http.ResponseWriter, *http.Request, *aos.Request) {
	return func(w http.ResponseWriter, _ *http.Request, req *aos.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(aos.Result(req.ID, d))
	}
}

// raw answers with fixed bytes.
func raw(status int, body string) func(http.ResponseWriter, *http.Request, *aos.Request) {
	return func(w http.ResponseWriter, _ *http.Request, _ *aos.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestGuardianCall(t *testing.T) {
	t.Parallel()
	req, e := aos.Decode(toolCallRequestBody(t))
	require.Nil(t, e)
	modified := *req
	modified.Params = json.RawMessage(strings.Replace(string(req.Params), "+337-665-99-06", "[REDACTED:PHONE]", 1))

	tests := []struct {
		name     string
		answer   func(http.ResponseWriter, *http.Request, *aos.Request)
		failOpen bool
		timeout  time.Duration
		want     aos.Decision // Decision and Message checked; ModifiedRequest if set
		wantErr  string       // substring of the error; "" for none
		rpcCode  int          // the *aos.Error code the error wraps
	}{
		{name: "allow", answer: decide(aos.Decision{Decision: aos.Allow, Message: "fine"}), want: aos.Decision{Decision: aos.Allow, Message: "fine"}},
		{name: "deny", answer: decide(aos.Decision{Decision: aos.Deny, Message: "premium number", ReasonCode: []string{"sms"}}), want: aos.Decision{Decision: aos.Deny, Message: "premium number"}},
		{name: "modify", answer: decide(aos.Decision{Decision: aos.Modify, Message: "masked", ModifiedRequest: &modified}), want: aos.Decision{Decision: aos.Modify, Message: "masked", ModifiedRequest: &modified}},
		{
			name:    "slow guardian fails closed",
			answer:  func(_ http.ResponseWriter, r *http.Request, _ *aos.Request) { <-r.Context().Done() },
			timeout: 50 * time.Millisecond,
			want:    aos.Decision{Decision: aos.Deny, Message: "guardian {url} unavailable: no answer within 50ms: context deadline exceeded"},
			wantErr: "no answer within 50ms",
		},
		{
			name:     "slow guardian fails open",
			answer:   func(_ http.ResponseWriter, r *http.Request, _ *aos.Request) { <-r.Context().Done() },
			timeout:  50 * time.Millisecond,
			failOpen: true,
			want:     aos.Decision{Decision: aos.Allow, Message: "guardian {url} unavailable, allowed because it fails open: no answer within 50ms: context deadline exceeded"},
			wantErr:  "no answer within 50ms",
		},
		{name: "invalid JSON", answer: raw(http.StatusOK, `{"jsonrpc":"2.0",`), want: aos.Decision{Decision: aos.Deny}, wantErr: "answer is not JSON"},
		{name: "invalid JSON fails open", answer: raw(http.StatusOK, `<html>`), failOpen: true, want: aos.Decision{Decision: aos.Allow}, wantErr: "answer is not JSON"},
		{
			name:    "decision the schema refuses",
			answer:  raw(http.StatusOK, `{"jsonrpc":"2.0","id":"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de","result":{"decision":"maybe","message":"hm"}}`),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "does not validate against the AOS schema",
		},
		{
			name:    "decision without message",
			answer:  raw(http.StatusOK, `{"jsonrpc":"2.0","id":"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de","result":{"decision":"allow"}}`),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "does not validate against the AOS schema",
		},
		{
			name:    "modify without modifiedRequest",
			answer:  decide(aos.Decision{Decision: aos.Modify, Message: "masked"}),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "modify without modifiedRequest",
		},
		{
			name: "answer to another request",
			answer: func(w http.ResponseWriter, r *http.Request, _ *aos.Request) {
				decide(aos.Decision{Decision: aos.Allow, Message: "ok"})(w, r, &aos.Request{ID: json.RawMessage(`"other"`)})
			},
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: `answer has id "other", the request has "13fa8d6f-8f9f-4d01-ba6b-db99d84d77de"`,
		},
		{
			name:    "JSON-RPC error",
			answer:  raw(http.StatusOK, `{"jsonrpc":"2.0","id":"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de","error":{"code":-32602,"message":"Invalid parameters"}}`),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "answered with an error",
			rpcCode: aos.CodeInvalidParams,
		},
		{
			name:    "ping result instead of a decision",
			answer:  raw(http.StatusOK, `{"jsonrpc":"2.0","id":"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de","result":{"status":"connected","version":"1","timestamp":"2026-03-01T11:00:00Z"}}`),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "ping result",
		},
		{name: "HTTP error", answer: raw(http.StatusServiceUnavailable, `{}`), want: aos.Decision{Decision: aos.Deny}, wantErr: "answered HTTP 503"},
		{
			name:    "answer too large",
			answer:  raw(http.StatusOK, `{"jsonrpc":"2.0","id":"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de","result":{"decision":"allow","message":"`+strings.Repeat("a", aos.MaxMessageBytes)+`"}}`),
			want:    aos.Decision{Decision: aos.Deny},
			wantErr: "larger than",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, calls := guardianServer(t, tt.answer)
			g := &aos.Guardian{URL: srv.URL + "/aos?token=secret", Timeout: tt.timeout, FailOpen: tt.failOpen, HTTPClient: srv.Client()}
			start := time.Now()
			d, err := g.Call(context.Background(), req)
			require.Less(t, time.Since(start), 10*time.Second)
			require.Equal(t, int32(1), calls.Load())
			require.Equal(t, tt.want.Decision, d.Decision)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want.Message, d.Message)
				if tt.want.ModifiedRequest != nil {
					require.Equal(t, tt.want.ModifiedRequest.Method, d.ModifiedRequest.Method)
					require.JSONEq(t, string(tt.want.ModifiedRequest.Params), string(d.ModifiedRequest.Params))
				}
				return
			}
			require.ErrorIs(t, err, aos.ErrGuardianUnavailable)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), "secret", "the query may hold credentials")
			require.NotContains(t, d.Message, "secret")
			require.Contains(t, d.Message, "guardian "+srv.URL+"/aos unavailable")
			require.Contains(t, d.ReasonCode, aos.ReasonGuardianUnavailable)
			if tt.want.Message != "" {
				require.Equal(t, strings.ReplaceAll(tt.want.Message, "{url}", srv.URL+"/aos"), d.Message)
			}
			if tt.timeout > 0 {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			if tt.rpcCode != 0 {
				rpcErr, ok := errors.AsType[*aos.Error](err)
				require.True(t, ok)
				require.Equal(t, tt.rpcCode, rpcErr.Code)
			}
			// What the caller records validates as a decision.
			b, err := json.Marshal(aos.Result(req.ID, d))
			require.NoError(t, err)
			require.NoError(t, aos.ValidateResponse(b))
		})
	}
}

func TestGuardianHooksAndHeaders(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	srv, calls := guardianServer(t, func(w http.ResponseWriter, r *http.Request, req *aos.Request) {
		auth.Store(r.Header.Get("Authorization"))
		decide(aos.Decision{Decision: aos.Allow, Message: "ok"})(w, r, req)
	})
	result, e := aos.Decode(repaired(t, example(t, "03-steps_toolCallResult.json")))
	require.Nil(t, e)
	request, e := aos.Decode(toolCallRequestBody(t))
	require.Nil(t, e)

	// Default hooks: toolCallRequest only.
	g := &aos.Guardian{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer g-token"}}}
	require.True(t, g.Wants(aos.MethodToolCallRequest))
	require.False(t, g.Wants(aos.MethodToolCallResult))
	d, err := g.Call(context.Background(), result)
	require.NoError(t, err)
	require.Equal(t, aos.Allow, d.Decision)
	require.Equal(t, int32(0), calls.Load(), "a hook the guardian is not asked at is not sent")

	d, err = g.Call(context.Background(), request)
	require.NoError(t, err)
	require.Equal(t, "ok", d.Message)
	require.Equal(t, "Bearer g-token", auth.Load())

	g = &aos.Guardian{URL: srv.URL, Hooks: []string{"toolCallResult", "steps/toolCallRequest"}}
	require.True(t, g.Wants(aos.MethodToolCallResult))
	require.True(t, g.Wants(aos.MethodToolCallRequest))
	_, err = g.Call(context.Background(), result)
	require.NoError(t, err)
	require.Equal(t, int32(2), calls.Load())
}

func TestGuardianRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	srv, calls := guardianServer(t, decide(aos.Decision{Decision: aos.Allow, Message: "ok"}))
	valid, e := aos.Decode(toolCallRequestBody(t))
	require.Nil(t, e)
	invalid, err := aos.NewRequest(1, aos.MethodToolCallRequest, map[string]any{"toolCallRequest": map[string]any{}})
	require.NoError(t, err)

	tests := []struct {
		name    string
		url     string
		req     *aos.Request
		wantErr string
	}{
		{name: "request the schema refuses", url: srv.URL, req: invalid, wantErr: "request does not validate"},
		{name: "no URL", url: "", req: valid, wantErr: "not an absolute http or https URL"},
		{name: "relative URL", url: "/aos", req: valid, wantErr: "not an absolute http or https URL"},
		{name: "other scheme", url: "file:///etc/passwd", req: valid, wantErr: "not an absolute http or https URL"},
	}
	// Runs after the parallel subtests.
	t.Cleanup(func() {
		if n := calls.Load(); n != 0 {
			t.Errorf("the guardian got %d requests, want none", n)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := (&aos.Guardian{URL: tt.url}).Call(context.Background(), tt.req)
			require.ErrorIs(t, err, aos.ErrGuardianUnavailable)
			require.ErrorContains(t, err, tt.wantErr)
			require.Equal(t, aos.Deny, d.Decision)
		})
	}
}

func TestGuardianUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	req, e := aos.Decode(toolCallRequestBody(t))
	require.Nil(t, e)
	g := &aos.Guardian{URL: "http://user:pw@" + strings.TrimPrefix(url, "http://") + "/hook", FailOpen: true}
	d, err := g.Call(context.Background(), req)
	require.ErrorIs(t, err, aos.ErrGuardianUnavailable)
	require.Equal(t, aos.Allow, d.Decision)
	require.Contains(t, d.Message, "fails open")
	require.NotContains(t, d.Message, "pw")
	require.NotContains(t, err.Error(), "pw")
}
