package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// result is what the tool implementation returned.
type result struct {
	output any
	// failure is set when the tool failed (ToolFailed, Timeout,
	// Unavailable); output is then nil.
	failure *apierr.Error
	// cost is the cost the tool reported, or -1.
	cost float64

	// Set by step 9.
	report   scanReport
	decision policy.Decision
	modified bool
	// block withholds the result (PolicyDenied at toolCallResult).
	block *apierr.Error
}

// invoke is step 7: call the tool implementation with the (possibly
// modified) input.
func (c *call) invoke(ctx context.Context) (*result, error) {
	spec := &c.tool.spec
	switch spec.Source {
	case resource.ToolSourceREST:
		return c.invokeREST(ctx)
	case resource.ToolSourceOS:
		return c.invokeOS(ctx)
	case resource.ToolSourceMCP:
		if c.g.cfg.MCP == nil || spec.MCP == nil {
			return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q is served by an MCP server, and the MCP gateway is not running", c.req.Tool), cost: -1}, nil
		}
		out, err := c.g.cfg.MCP.CallTool(ctx, c.p.Tenant, c.p.Namespace, spec.MCP.Server, spec.MCP.Tool, c.input)
		if err != nil {
			if e, ok := apierr.As(err); ok {
				// A tool that answered with isError keeps its result.
				return &result{failure: e, output: out, cost: -1}, nil
			}
			return &result{failure: apierr.New(apierr.CodeToolFailed, "MCP tool %s/%s failed: %s", spec.MCP.Server, spec.MCP.Tool, err), cost: -1}, nil
		}
		return &result{output: out, cost: -1}, nil
	}
	return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q has source %q, which the gateway cannot run", c.req.Tool, spec.Source), cost: -1}, nil
}

// CostHeader is the response header in which a REST tool may report the
// cost of a call in USD; it replaces the Tool's costPerCall in budgets.
const CostHeader = "Warden-Cost"

// invokeREST calls a REST tool: the input as the JSON body (or the query
// string for GET), the Tool's headers with secrets resolved here, at the
// gateway boundary, the idempotency key as Idempotency-Key so that the
// tool server can deduplicate too, a timeout and a response size cap.
func (c *call) invokeREST(ctx context.Context) (*result, error) {
	rs := c.tool.spec.REST
	if rs == nil || rs.URL == "" {
		return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q has no spec.rest.url", c.req.Tool), cost: -1}, nil
	}
	timeout := restTimeout(rs)
	maxBytes := int64(DefaultMaxResponseBytes)
	if rs.MaxResponseBytes > 0 {
		maxBytes = rs.MaxResponseBytes
	}
	method := strings.ToUpper(rs.Method)
	if method == "" {
		method = http.MethodPost
	}
	body, err := json.Marshal(c.input)
	if err != nil {
		return nil, errorf("encode input: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := rs.URL
	var rdr io.Reader = bytes.NewReader(body)
	if method == http.MethodGet || method == http.MethodDelete {
		url, rdr = withQuery(url, c.input), nil
	}
	req, err := http.NewRequestWithContext(cctx, method, url, rdr)
	if err != nil {
		return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q has an invalid URL: %s", c.req.Tool, err), cost: -1}, nil
	}
	for k, v := range rs.Headers {
		req.Header.Set(k, v)
	}
	for h, ref := range rs.HeaderSecrets {
		if c.g.cfg.Secrets == nil {
			return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q needs secret headers and no secret broker is configured", c.req.Tool), cost: -1}, nil
		}
		var v string
		err := c.g.st.View(ctx, c.p.Tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			v, err = c.g.cfg.Secrets.Resolve(ctx, r, c.p.Tenant, c.p.Namespace, ref.Name, ref.Key)
			return err
		})
		if err != nil {
			// The message names the Secret, never its value.
			return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q: header %s: secret %s key %s cannot be resolved", c.req.Tool, h, ref.Name, ref.Key), cost: -1}, nil
		}
		req.Header.Set(h, v)
	}
	if rdr != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", c.key)
	req.Header.Set("Warden-Tool-Call", c.name)
	resp, err := c.g.http.Do(req)
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return &result{failure: apierr.New(apierr.CodeTimeout, "tool %q did not answer within %s", c.req.Tool, timeout), cost: -1}, nil
		}
		return &result{failure: apierr.New(apierr.CodeToolFailed, "tool %q could not be reached: %s", c.req.Tool, redactURLError(err)), cost: -1}, nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return &result{failure: apierr.New(apierr.CodeTimeout, "tool %q did not answer within %s", c.req.Tool, timeout), cost: -1}, nil
		}
		return &result{failure: apierr.New(apierr.CodeToolFailed, "reading the answer of tool %q: %s", c.req.Tool, err), cost: -1}, nil
	}
	if int64(len(b)) > maxBytes {
		return &result{failure: apierr.New(apierr.CodeToolFailed, "tool %q answered more than %d bytes (spec.rest.maxResponseBytes)", c.req.Tool, maxBytes).
			WithDetails(map[string]any{"httpStatus": resp.StatusCode}), cost: -1}, nil
	}
	res := &result{cost: -1}
	if v := resp.Header.Get(CostHeader); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			res.cost = f
		}
	}
	out := decodeOutput(b)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.failure = apierr.New(apierr.CodeToolFailed, "tool %q answered HTTP %d", c.req.Tool, resp.StatusCode).
			WithDetails(map[string]any{"httpStatus": resp.StatusCode})
		res.output = out
		return res, nil
	}
	res.output = out
	return res, nil
}

// decodeOutput parses a JSON answer; anything else is kept as text.
func decodeOutput(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&v); err == nil && !d.More() {
		return v
	}
	return map[string]any{"text": string(b)}
}

// withQuery adds flat input values to a URL's query string.
func withQuery(url string, input map[string]any) string {
	if len(input) == 0 {
		return url
	}
	var q []string
	for k, v := range input {
		var s string
		switch t := v.(type) {
		case string:
			s = t
		default:
			b, _ := json.Marshal(t)
			s = string(b)
		}
		q = append(q, neturl.QueryEscape(k)+"="+neturl.QueryEscape(s))
	}
	slices.Sort(q)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + strings.Join(q, "&")
}

// redactURLError drops the URL from a transport error: it may carry
// credentials in its query.
func redactURLError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return fmt.Sprint(err)
}

// invokeOS runs an OS tool in the sandbox: the input as JSON on stdin, the
// output parsed from stdout (JSON, or text).
func (c *call) invokeOS(ctx context.Context) (*result, error) {
	spec := c.tool.spec.OS
	if c.g.cfg.OS == nil || spec == nil {
		return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q runs in the OS sandbox, which is not available on this gateway", c.req.Tool), cost: -1}, nil
	}
	stdin, err := json.Marshal(c.input)
	if err != nil {
		return nil, errorf("encode input: %w", err)
	}
	timeout := osTimeout(spec)
	maxOut := int64(DefaultMaxResponseBytes)
	if s := c.tool.spec.Safety; s != nil && s.MaxOutputBytes > 0 {
		maxOut = s.MaxOutputBytes
	}
	r, err := c.g.cfg.OS.RunTool(ctx, OSJob{
		Command: spec.Command, Stdin: stdin, Timeout: timeout, CPUSeconds: spec.CPUSeconds, MemoryMB: spec.MemoryMB,
		AllowRead: spec.AllowRead, AllowWrite: spec.AllowWrite, AllowHosts: spec.AllowHosts, MaxOutputBytes: maxOut,
	})
	if err != nil {
		return &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q could not be started in the sandbox: %s", c.req.Tool, err), cost: -1}, nil
	}
	out := map[string]any{"exitCode": r.ExitCode, "stdout": string(r.Stdout), "stderr": string(r.Stderr)}
	if len(bytes.TrimSpace(r.Stdout)) > 0 {
		// stdout that is JSON is also the structured result.
		v := decodeOutput(r.Stdout)
		if m, ok := v.(map[string]any); !ok || len(m) != 1 || m["text"] == nil {
			out["result"] = v
		}
	}
	if r.Truncated {
		out["truncated"] = true
	}
	res := &result{output: out, cost: -1}
	switch {
	case r.TimedOut:
		res.failure = apierr.New(apierr.CodeTimeout, "tool %q was killed at its time limit of %s", c.req.Tool, timeout)
	case r.ExitCode != 0:
		res.failure = apierr.New(apierr.CodeToolFailed, "tool %q exited with status %d", c.req.Tool, r.ExitCode).
			WithDetails(map[string]any{"exitCode": r.ExitCode})
	}
	return res, nil
}
