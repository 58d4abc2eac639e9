package aos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultGuardianTimeout is how long Guardian.Call waits when Timeout is
// zero (the Policy resource's default "2s").
const DefaultGuardianTimeout = 2 * time.Second

// Reason codes of the decisions Guardian.Call makes up when the guardian
// did not decide.
const (
	ReasonGuardianUnavailable = "guardian_unavailable"
	ReasonFailOpen            = "fail_open"
	ReasonFailClosed          = "fail_closed"
)

// Guardian is an external Guardian Agent: a third-party policy service
// that answers AOS requests with decisions. Its fields are read-only once
// Call is in use; Call is safe for concurrent use.
type Guardian struct {
	// URL is the guardian's AOS endpoint (http or https).
	URL string
	// Timeout bounds each call, answer included; default
	// DefaultGuardianTimeout.
	Timeout time.Duration
	// FailOpen allows the step when the guardian fails; by default it is
	// denied.
	FailOpen bool
	// Hooks are the hooks the guardian is asked at: "toolCallRequest"
	// and/or "toolCallResult" (or the full method names); default
	// ["toolCallRequest"].
	Hooks []string
	// HTTPClient sends the requests; default http.DefaultClient. Call
	// enforces Timeout through the request context, not the client.
	HTTPClient *http.Client
	// Header is added to every request (an Authorization header, say).
	Header http.Header
}

// Wants reports whether the guardian is to be asked about method.
func (g *Guardian) Wants(method string) bool {
	hooks := g.Hooks
	if len(hooks) == 0 {
		hooks = []string{"toolCallRequest"}
	}
	hook := strings.TrimPrefix(method, "steps/")
	return slices.ContainsFunc(hooks, func(h string) bool { return strings.TrimPrefix(h, "steps/") == hook })
}

// Call asks the guardian to decide req and returns its decision.
//
// req is validated against the schema before it is sent, and the answer
// must be a valid AOS response with the same id whose decision follows
// the rules of Decision. When anything fails (no answer within Timeout,
// a transport error, an HTTP status other than 200, more than
// MaxMessageBytes, an invalid answer, a JSON-RPC error), Call returns an
// error wrapping ErrGuardianUnavailable (and the *Error the guardian sent,
// or context.DeadlineExceeded on timeout) for the caller to record,
// together with the decision to apply: allow when FailOpen, else deny
// with the message "guardian <url> unavailable: <cause>". The URL in
// messages and errors has no credentials and no query.
//
// A guardian that does not want req's method (see Wants) is not called:
// Call allows, with a nil error.
func (g *Guardian) Call(ctx context.Context, req *Request) (Decision, error) {
	if !g.Wants(req.Method) {
		return Decision{Decision: Allow, Message: fmt.Sprintf("guardian %s is not asked at %s", g.safeURL(), req.Method)}, nil
	}
	d, cause := g.call(ctx, req)
	if cause == nil {
		return d, nil
	}
	fail := Decision{
		Decision:   Deny,
		Message:    fmt.Sprintf("guardian %s unavailable: %v", g.safeURL(), cause),
		ReasonCode: []string{ReasonGuardianUnavailable, ReasonFailClosed},
	}
	if g.FailOpen {
		fail.Decision = Allow
		fail.Message = fmt.Sprintf("guardian %s unavailable, allowed because it fails open: %v", g.safeURL(), cause)
		fail.ReasonCode = []string{ReasonGuardianUnavailable, ReasonFailOpen}
	}
	return fail, fmt.Errorf("%w: %s: %w", ErrGuardianUnavailable, g.safeURL(), cause)
}

func (g *Guardian) call(ctx context.Context, req *Request) (Decision, error) {
	s, err := DefaultSchema()
	if err != nil {
		return Decision{}, err
	}
	body, err := marshalJSON(req)
	if err != nil {
		return Decision{}, fmt.Errorf("encode request: %w", err)
	}
	if err := s.ValidateRequest(body); err != nil {
		return Decision{}, fmt.Errorf("request does not validate against the AOS schema: %w", err)
	}
	if u, err := url.Parse(g.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Decision{}, errors.New("URL is not an absolute http or https URL")
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultGuardianTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded))
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return Decision{}, fmt.Errorf("build request: %w", unwrapURLError(err))
	}
	for k, vs := range g.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	client := g.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return Decision{}, transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Decision{}, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxMessageBytes+1))
	if err != nil {
		return Decision{}, transportError(ctx, err)
	}
	if len(raw) > MaxMessageBytes {
		return Decision{}, fmt.Errorf("answer is larger than %d bytes", MaxMessageBytes)
	}
	v, err := parseJSON(raw)
	if err != nil {
		return Decision{}, fmt.Errorf("answer is not JSON: %w", err)
	}
	if err := s.ValidateResponse(v); err != nil {
		return Decision{}, fmt.Errorf("answer does not validate against the AOS schema: %w", err)
	}
	m := v.(map[string]any) // every ASOPResponse branch is an object
	if sent, _ := parseJSON(req.ID); !idEqual(sent, m["id"]) {
		got, _ := marshalJSON(m["id"])
		return Decision{}, fmt.Errorf("answer has id %s, the request has %s", got, req.ID)
	}
	if e := obj(m, "error"); e != nil {
		code, _ := e["code"].(json.Number).Float64() // an integer, maybe written 1.0 or 1e3
		return Decision{}, fmt.Errorf("answered with an error: %w", &Error{Code: int(code), Message: str(e, "message"), Data: e["data"]})
	}
	result := obj(m, "result")
	if _, ok := result["decision"]; !ok {
		return Decision{}, errors.New("answered with a ping result, not a decision")
	}
	d, err := decisionFrom(result)
	if err != nil {
		return Decision{}, err
	}
	if err := d.check(req.Method); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// safeURL is the guardian URL without user info, query or fragment, fit
// for messages, logs and decisions.
func (g *Guardian) safeURL() string {
	u, err := url.Parse(g.URL)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// transportError says why a request failed without the URL that
// *url.Error would repeat (query and all), naming a timeout as such.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return unwrapURLError(err)
}

func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
