package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/execution"
	"github.com/warden-dev/warden/app/resource"
)

func executionPath(ns, name string) string {
	p := "/v1/namespaces/" + url.PathEscape(ns) + "/executions"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// ExecutionCreate creates and runs an execution
// (POST /v1/namespaces/{ns}/executions) and returns it as recorded.
func (c *Client) ExecutionCreate(ctx context.Context, ns string, req execution.CreateRequest) (*resource.Object, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode execution: %w", err)
	}
	var out resource.Object
	if err := c.doJSON(ctx, http.MethodPost, executionPath(ns, ""), nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionCancel cancels an unfinished execution.
func (c *Client) ExecutionCancel(ctx context.Context, ns, name string) (*resource.Object, error) {
	var out resource.Object
	if err := c.doJSON(ctx, http.MethodPost, executionPath(ns, name)+"/cancel", nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionReplay replays the tool calls of a finished execution.
func (c *Client) ExecutionReplay(ctx context.Context, ns, name string, force bool) (*execution.ReplayResult, error) {
	body, err := json.Marshal(execution.ReplayRequest{Force: force})
	if err != nil {
		return nil, err
	}
	var out execution.ReplayResult
	if err := c.doJSON(ctx, http.MethodPost, executionPath(ns, name)+"/replay", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionEvents calls fn with the events of an execution after the
// sequence number after, in order; with follow it keeps reading until the
// execution's last event (the server ends the stream then).
func (c *Client) ExecutionEvents(ctx context.Context, ns, name string, after int64, follow bool, fn func(events.Event) error) error {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if follow {
		q.Set("follow", "true")
	}
	resp, err := c.do(ctx, http.MethodGet, executionPath(ns, name)+"/events", q, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue // a keep-alive
		}
		var ev events.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("decode an event of %s: %w", name, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the events of %s: %w", name, err)
	}
	return nil
}

// Promote promotes an agent to the next environment (POST /v1/promote).
func (c *Client) Promote(ctx context.Context, req execution.PromoteRequest) (*execution.PromoteResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out execution.PromoteResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/promote", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionListOptions filters a list of executions. Empty fields do not
// filter.
type ExecutionListOptions struct {
	// Agent keeps the executions of one agent.
	Agent string
	// Phase keeps the executions in one phase, e.g. Failed.
	Phase string
	// Since keeps the executions created after it: a duration back from
	// now ("1h") or an RFC 3339 time.
	Since string
	// Selector is a label selector, as in ListOptions.
	Selector string
}

// ExecutionListAll lists every matching execution of namespace ns
// (GET /v1/namespaces/{ns}/executions?agent=…&phase=…&since=…), following
// continue tokens.
func (c *Client) ExecutionListAll(ctx context.Context, ns string, opts ExecutionListOptions) (*api.List, error) {
	return c.listAllFiltered(ctx, "executions", ns,
		filterQuery(map[string]string{"agent": opts.Agent, "phase": opts.Phase, "since": opts.Since}, opts.Selector, 0, ""))
}

// EvalRun runs evaluation suite name (POST /v1/eval/{name}/run) and
// returns each case's verdict.
func (c *Client) EvalRun(ctx context.Context, name string, req execution.EvalRequest) (*execution.EvalResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out execution.EvalResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/eval/"+url.PathEscape(name)+"/run", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
