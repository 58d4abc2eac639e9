package execution_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/gateway"
)

// TestRun is a full run on each backend: the model asks for a tool, the
// tool runs once through the gateway, the model answers, the execution
// succeeds and its events come in order.
func TestRun(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, url(t))
			exec := e.run("search refunds")
			done := e.waitPhase(exec, "Succeeded")
			st := done.body["status"].(map[string]any)
			out := st["output"].(map[string]any)
			require.Contains(t, out["answer"], `"query":"refunds"`)
			require.Len(t, out["toolCalls"], 1)
			require.NotEmpty(t, st["startedAt"])
			require.NotEmpty(t, st["completedAt"])
			require.Equal(t, 1, e.tools.count("/search"))

			require.Equal(t, []string{"ExecutionCreated", "ExecutionScheduled", "ExecutionStarted",
				"ModelCallStarted", "ModelCallCompleted", "ToolCallRequested", "ToolCallCompleted",
				"ModelCallStarted", "ModelCallCompleted", "ExecutionSucceeded"}, e.eventTypes(exec))

			// The call is recorded with the execution, as the agent.
			call := out["toolCalls"].([]any)[0].(string)
			tc := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/toolcalls/"+call, e.admin, nil, nil)
			require.Equal(t, http.StatusOK, tc.status, string(tc.raw))
			spec := tc.body["spec"].(map[string]any)
			require.Equal(t, exec, spec["executionRef"].(map[string]any)["name"])
			require.Equal(t, "bot", spec["agentRef"].(map[string]any)["name"])

			// The model router saw the agent's workload token and the
			// manifest's tools as functions.
			e.model.mu.Lock()
			defer e.model.mu.Unlock()
			require.Len(t, e.model.claims, 2)
			for _, c := range e.model.claims {
				require.Equal(t, "warden:model-router", c["aud"])
				require.Equal(t, "bot", c["agent"])
				require.Equal(t, "dev", c["environment"])
			}
			require.ElementsMatch(t, []string{"crm__search", "tickets__create", "payments__refund"}, e.model.tools)
		})
	}
}

// TestFollow streams the events of a run as they happen; the stream ends
// with the run and resumes after a sequence number.
func TestFollow(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("search follow")
	req, err := http.NewRequest(http.MethodGet, e.cpURL+"/v1/namespaces/default/executions/"+exec+"/events?follow=true", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var types []string
	var seqs []float64
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue // a keep-alive
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		types = append(types, ev["type"].(string))
		seqs = append(seqs, ev["seq"].(float64))
	}
	require.NoError(t, sc.Err())
	require.Equal(t, "ExecutionCreated", types[0])
	require.Equal(t, "ExecutionSucceeded", types[len(types)-1])

	// Resume after the third event: the rest, nothing twice.
	r := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions/"+exec+"/events?follow=true&after="+
		jsonNumber(seqs[2]), e.admin, nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	lines := 0
	for _, l := range strings.Split(string(r.raw), "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	require.Equal(t, len(types)-3, lines)

	// Server-sent events carry the sequence as the id.
	r = do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions/"+exec+"/events", e.admin, nil,
		map[string]string{"Accept": "text/event-stream", "Last-Event-ID": jsonNumber(seqs[len(seqs)-2])})
	require.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
	require.Contains(t, string(r.raw), "event: ExecutionSucceeded\ndata: {")
	require.NotContains(t, string(r.raw), "ExecutionCreated")
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// TestApprovalPausesTheRun: a financial tool needs approval; the run
// waits, and goes on once an approver approves.
func TestApprovalPausesTheRun(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("refund 10")
	w := e.waitPhase(exec, "Waiting")
	call := w.body["status"].(map[string]any)["waitingOn"].(string)
	require.Equal(t, 0, e.tools.count("/refund"))
	r := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+call+"/approve?namespace=default", e.admin, map[string]any{"rationale": "ok"}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	e.waitPhase(exec, "Succeeded")
	require.Equal(t, 1, e.tools.count("/refund"))
	types := e.eventTypes(exec)
	require.Contains(t, types, "ApprovalRequested")
	require.Contains(t, types, "ApprovalGranted")
}

// TestCancel cancels a run that waits for an approval: it ends Cancelled,
// the paused call is cancelled and the tool never runs.
func TestCancel(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("refund 10")
	w := e.waitPhase(exec, "Waiting")
	call := w.body["status"].(map[string]any)["waitingOn"].(string)
	base := e.cpURL + "/v1/namespaces/default/executions/" + exec
	r := do(t, http.MethodPost, base+"/cancel", e.admin, nil, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "Cancelled", r.phase())

	// Cancelling again, or cancelling an unknown execution, is refused.
	for _, tc := range []struct {
		name, path, code string
		status           int
	}{
		{"again", base + "/cancel", "Conflict", http.StatusConflict},
		{"unknown", e.cpURL + "/v1/namespaces/default/executions/nope/cancel", "NotFound", http.StatusNotFound},
	} {
		r := do(t, http.MethodPost, tc.path, e.admin, nil, nil)
		require.Equal(t, tc.status, r.status, tc.name)
		require.Equal(t, tc.code, r.code(), tc.name)
	}
	require.Eventually(t, func() bool {
		tc := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/toolcalls/"+call, e.admin, nil, nil)
		return tc.phase() == "Cancelled"
	}, 30*1e9, 20*1e6)
	require.Equal(t, 0, e.tools.count("/refund"))
	types := e.eventTypes(exec)
	require.Equal(t, "ExecutionFailed", types[len(types)-1])
	require.Equal(t, "Cancelled", e.waitPhase(exec, "Cancelled").phase())
}

// TestStepLimit: a model that never answers fails the run.
func TestStepLimit(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("loop")
	f := e.waitPhase(exec, "Failed")
	require.Contains(t, f.body["status"].(map[string]any)["error"], "step limit")
}

// TestReplay replays a run's tool calls: deduplicated without force (the
// tool does not run again), refused with force until a policy allows it.
func TestReplay(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("ticket hello")
	e.waitPhase(exec, "Succeeded")
	require.Equal(t, 1, e.tools.count("/create"))
	path := e.cpURL + "/v1/namespaces/default/executions/" + exec + "/replay"

	r := do(t, http.MethodPost, path, e.admin, nil, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	items := r.body["items"].([]any)
	require.Len(t, items, 1)
	item := items[0].(map[string]any)
	require.Equal(t, true, item["deduplicated"], string(r.raw))
	require.Equal(t, item["toolCall"], item["replay"])
	require.Equal(t, "Succeeded", item["phase"])
	require.Equal(t, 1, e.tools.count("/create"), "a replay without force never runs the tool again")

	r = do(t, http.MethodPost, path, e.admin, map[string]any{"force": true}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	item = r.body["items"].([]any)[0].(map[string]any)
	require.Equal(t, float64(http.StatusForbidden), item["status"])
	require.Contains(t, item["error"], "PolicyDenied")
	require.Equal(t, 1, e.tools.count("/create"))

	// A policy that allows force lets the replay run the tool again.
	e.apply(e.admin, `apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: guard}
spec:
  version: "3"
  idempotency: {allowForce: true}
  rules:
    - name: no-gpt4o-in-prod
      hooks: [preflight]
      when: 'environment == "prod" && "openai:gpt-4o" in models'
      action: deny
`)
	r = do(t, http.MethodPost, path, e.admin, map[string]any{"force": true}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	item = r.body["items"].([]any)[0].(map[string]any)
	require.Equal(t, "Succeeded", item["phase"], string(r.raw))
	require.NotEqual(t, item["toolCall"], item["replay"])
	require.Equal(t, 2, e.tools.count("/create"))

	// The forced replay is not itself replayed next time.
	r = do(t, http.MethodPost, path, e.admin, nil, nil)
	require.Len(t, r.body["items"], 1)
}

// TestPromote promotes bot dev → staging, and is refused staging → prod
// by the preflight policy, writing nothing.
func TestPromote(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	get := func(name string) resp {
		return do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/deployments/"+name, e.admin, nil, nil)
	}
	cases := []struct {
		name   string
		body   map[string]any
		status int
		code   string
		check  func(r resp)
	}{
		{name: "dev to staging", body: map[string]any{"agent": "bot", "from": "dev", "to": "staging"}, status: http.StatusOK,
			check: func(r resp) {
				require.Equal(t, "bot-staging", r.body["deployment"])
				require.Equal(t, "bot-g1", r.body["manifest"])
				d := get("bot-staging")
				require.Equal(t, http.StatusOK, d.status)
				require.Equal(t, "staging", d.body["spec"].(map[string]any)["environment"])
				require.Equal(t, "dev", d.body["metadata"].(map[string]any)["annotations"].(map[string]any)["warden.dev/promoted-from"])
			}},
		{name: "staging to prod denied by policy", body: map[string]any{"agent": "bot", "from": "staging", "to": "prod"},
			status: http.StatusForbidden, code: "PolicyDenied", check: func(r resp) {
				details := r.body["error"].(map[string]any)["details"].(map[string]any)
				require.Equal(t, "guard", details["policyId"])
				require.Equal(t, "2", details["policyVersion"])
				require.Equal(t, "no-gpt4o-in-prod", details["rule"])
				require.NotEmpty(t, details["diagnostics"])
				require.Contains(t, r.body["error"].(map[string]any)["message"], "guard@2")
				require.Equal(t, http.StatusNotFound, get("bot-prod").status, "nothing is written")
			}},
		{name: "skipping an environment", body: map[string]any{"agent": "bot", "from": "dev", "to": "prod"},
			status: http.StatusBadRequest, code: "InvalidRequest"},
		{name: "not deployed there", body: map[string]any{"agent": "bot", "from": "prod", "to": "staging"},
			status: http.StatusBadRequest, code: "InvalidRequest"},
		{name: "unknown agent", body: map[string]any{"agent": "nobody", "from": "dev", "to": "staging"},
			status: http.StatusNotFound, code: "NotFound"},
		{name: "missing fields", body: map[string]any{"agent": "bot"}, status: http.StatusBadRequest, code: "InvalidRequest"},
		{name: "unknown field", body: map[string]any{"agent": "bot", "from": "dev", "to": "staging", "x": 1},
			status: http.StatusBadRequest, code: "InvalidRequest"},
	}
	for _, tc := range cases {
		r := do(t, http.MethodPost, e.cpURL+"/v1/promote", e.admin, tc.body, nil)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
		require.Equal(t, tc.code, r.code(), tc.name)
		if tc.check != nil {
			tc.check(r)
		}
	}
}

// TestCreateRefusals are the requests POST …/executions refuses.
func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	cases := []struct {
		name   string
		token  string
		body   any
		status int
		code   string
	}{
		{"no credential", "", map[string]any{"agent": "bot", "prompt": "hi"}, http.StatusUnauthorized, "Unauthenticated"},
		{"no agent", e.admin, map[string]any{"prompt": "hi"}, http.StatusBadRequest, "InvalidRequest"},
		{"no input", e.admin, map[string]any{"agent": "bot"}, http.StatusBadRequest, "InvalidRequest"},
		{"prompt twice", e.admin, map[string]any{"agent": "bot", "prompt": "a", "input": map[string]any{"prompt": "b"}}, http.StatusBadRequest, "InvalidRequest"},
		{"unknown agent", e.admin, map[string]any{"agent": "ghost", "prompt": "hi"}, http.StatusNotFound, "NotFound"},
		{"not deployed there", e.admin, map[string]any{"agent": "bot", "prompt": "hi", "environment": "prod"}, http.StatusConflict, "Conflict"},
		{"unknown field", e.admin, map[string]any{"agent": "bot", "prompt": "hi", "x": true}, http.StatusBadRequest, "InvalidRequest"},
		{"not JSON", e.admin, "{", http.StatusBadRequest, "InvalidRequest"},
	}
	for _, tc := range cases {
		r := do(t, http.MethodPost, e.cpURL+"/v1/namespaces/default/executions", tc.token, tc.body, nil)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
		require.Equal(t, tc.code, r.code(), tc.name)
	}
	// The environment defaults to the only one the agent is deployed to.
	r := do(t, http.MethodPost, e.cpURL+"/v1/namespaces/default/executions", e.admin, map[string]any{"agent": "bot", "prompt": "hello"}, nil)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "dev", r.body["spec"].(map[string]any)["environment"])
	require.Equal(t, "bot-g1", r.body["spec"].(map[string]any)["manifest"])
	done := e.waitPhase(r.name(), "Succeeded")
	require.Equal(t, "hello there", done.body["status"].(map[string]any)["output"].(map[string]any)["answer"])

	// Lists filter by agent and phase.
	l := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions?agent=bot&phase=Succeeded&since=1h", e.admin, nil, nil)
	require.Equal(t, http.StatusOK, l.status, string(l.raw))
	require.Equal(t, "ExecutionList", l.body["kind"])
	require.Len(t, l.body["items"], 1)
	l = do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions?phase=Failed", e.admin, nil, nil)
	require.Empty(t, l.body["items"])
}

// TestOtherTenants: another tenant's owner sees none of tenant default's
// executions and can change none; on Postgres row-level security holds.
func TestOtherTenants(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, url(t))
			exec := e.run("search mine")
			e.waitPhase(exec, "Succeeded")
			other := newTenant(t, e.st, "tenant-b")
			base := e.cpURL + "/v1/namespaces/default/executions/"
			cases := []struct {
				name, method, path string
				body               any
			}{
				{"get", http.MethodGet, base + exec, nil},
				{"events", http.MethodGet, base + exec + "/events", nil},
				{"cancel", http.MethodPost, base + exec + "/cancel", nil},
				{"replay", http.MethodPost, base + exec + "/replay", nil},
				{"run the agent", http.MethodPost, e.cpURL + "/v1/namespaces/default/executions", map[string]any{"agent": "bot", "prompt": "x"}},
				{"promote the agent", http.MethodPost, e.cpURL + "/v1/promote", map[string]any{"agent": "bot", "from": "dev", "to": "staging"}},
			}
			for _, tc := range cases {
				r := do(t, tc.method, tc.path, other, tc.body, nil)
				require.Equal(t, http.StatusNotFound, r.status, "%s: %s", tc.name, r.raw)
				require.NotContains(t, string(r.raw), "mine", tc.name)
			}
			l := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions", other, nil, nil)
			require.Equal(t, http.StatusOK, l.status)
			require.Empty(t, l.body["items"])
			// Tenant default's run is untouched.
			require.Equal(t, "Succeeded", e.waitPhase(exec, "Succeeded").phase())
			require.Equal(t, http.StatusNotFound, do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/deployments/bot-staging", e.admin, nil, nil).status)
		})
	}
}

// TestEval runs a suite: one case passes, one fails with its reasons, and
// malformed suites are refused.
func TestEval(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	suite := map[string]any{"agent": "bot", "environment": "dev", "cases": []any{
		map[string]any{"name": "search", "prompt": "search refunds", "expectTools": []string{"crm.search"}, "expectAnswer": "REFUNDS"},
		map[string]any{"name": "greets-only", "prompt": "hello", "expectTools": []string{"crm.search"}, "expectAnswer": "hello"},
	}}
	r := do(t, http.MethodPost, e.cpURL+"/v1/eval/smoke/run", e.admin, suite, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "EvalResult", r.body["kind"])
	require.Equal(t, float64(1), r.body["passed"])
	require.Equal(t, float64(1), r.body["failed"])
	cases := r.body["cases"].([]any)
	first, second := cases[0].(map[string]any), cases[1].(map[string]any)
	require.Equal(t, true, first["passed"], string(r.raw))
	require.Equal(t, []any{"crm.search"}, first["tools"])
	require.Equal(t, false, second["passed"])
	require.Equal(t, "Succeeded", second["phase"])
	require.Equal(t, []any{"expected a call of crm.search"}, second["failures"])

	// The suite's executions carry its name.
	l := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions?labelSelector=warden.dev/eval=smoke", e.admin, nil, nil)
	require.Len(t, l.body["items"], 2)

	for _, tc := range []struct {
		name string
		path string
		body any
		code string
	}{
		{"no cases", "/v1/eval/smoke/run", map[string]any{"agent": "bot", "cases": []any{}}, "InvalidRequest"},
		{"bad suite name", "/v1/eval/Bad_Name/run", suite, "InvalidRequest"},
		{"duplicate case", "/v1/eval/smoke/run", map[string]any{"agent": "bot", "cases": []any{
			map[string]any{"name": "a", "prompt": "hello"}, map[string]any{"name": "a", "prompt": "hello"}}}, "InvalidRequest"},
		{"bad timeout", "/v1/eval/smoke/run", map[string]any{"agent": "bot", "timeout": "1y", "cases": []any{
			map[string]any{"name": "a", "prompt": "hello"}}}, "InvalidRequest"},
		{"unknown agent", "/v1/eval/smoke/run", map[string]any{"agent": "ghost", "cases": []any{
			map[string]any{"name": "a", "prompt": "hello"}}}, "NotFound"},
	} {
		r := do(t, http.MethodPost, e.cpURL+tc.path, e.admin, tc.body, nil)
		require.Equal(t, tc.code, r.code(), "%s: %s", tc.name, r.raw)
	}
}

// TestSurvivesRestart: an execution whose process stopped before its job
// ran is run by the next process, from the job queue on the store.
func TestSurvivesRestart(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storeURL := url(t)
			first := startWith(t, storeURL, false, "")
			exec := first.run("search restart")
			require.Equal(t, "Scheduled", first.waitPhase(exec, "Scheduled").phase())
			first.stop()

			second := startWith(t, storeURL, true, first.admin)
			done := second.waitPhase(exec, "Succeeded")
			require.Contains(t, done.body["status"].(map[string]any)["output"].(map[string]any)["answer"], "restart")
			// The job may start before the second process re-applies the
			// fixture (which points the tool at its own tool server): the
			// tool ran once, on either.
			require.Equal(t, 1, first.tools.count("/search")+second.tools.count("/search"))
		})
	}
}

// TestRoles: who may run, cancel, replay, promote and evaluate, decided by
// app/authz's matrix.
func TestRoles(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	key := func(name, role string) string {
		r := do(t, http.MethodPost, e.cpURL+"/v1/apikeys", e.admin, map[string]any{"name": name, "namespace": "default", "role": role}, nil)
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		return r.body["secret"].(string)
	}
	viewer, editor := key("v", "viewer"), key("ed", "editor")
	exec := e.run("ticket roles")
	e.waitPhase(exec, "Succeeded")
	base := e.cpURL + "/v1/namespaces/default/executions"
	cases := []struct {
		name, token, method, path string
		body                      any
		status                    int
	}{
		{"viewer reads", viewer, http.MethodGet, base + "/" + exec, nil, http.StatusOK},
		{"viewer lists", viewer, http.MethodGet, base, nil, http.StatusOK},
		{"viewer reads events", viewer, http.MethodGet, base + "/" + exec + "/events", nil, http.StatusOK},
		{"viewer may not run", viewer, http.MethodPost, base, map[string]any{"agent": "bot", "prompt": "hello"}, http.StatusForbidden},
		{"viewer may not cancel", viewer, http.MethodPost, base + "/" + exec + "/cancel", nil, http.StatusForbidden},
		{"viewer may not promote", viewer, http.MethodPost, e.cpURL + "/v1/promote", map[string]any{"agent": "bot", "from": "dev", "to": "staging"}, http.StatusForbidden},
		{"viewer may not evaluate", viewer, http.MethodPost, e.cpURL + "/v1/eval/s/run", map[string]any{"agent": "bot", "cases": []any{map[string]any{"name": "a", "prompt": "hello"}}}, http.StatusForbidden},
		{"editor may not replay", editor, http.MethodPost, base + "/" + exec + "/replay", nil, http.StatusForbidden},
		{"editor runs", editor, http.MethodPost, base, map[string]any{"agent": "bot", "prompt": "hello"}, http.StatusCreated},
		{"editor promotes", editor, http.MethodPost, e.cpURL + "/v1/promote", map[string]any{"agent": "bot", "from": "dev", "to": "staging"}, http.StatusOK},
		{"the system-only kind is not applied", editor, http.MethodPatch, base + "/" + exec, map[string]any{"spec": map[string]any{"input": map[string]any{}}}, http.StatusForbidden},
	}
	for _, tc := range cases {
		r := do(t, tc.method, tc.path, tc.token, tc.body, nil)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
	}
	require.Equal(t, 1, e.tools.count("/create"), "refused requests run nothing")
}

// TestApprovalDenied: a denied call's reason goes to the model, which
// answers; the tool never runs.
func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	exec := e.run("refund 10")
	w := e.waitPhase(exec, "Waiting")
	call := w.body["status"].(map[string]any)["waitingOn"].(string)
	r := do(t, http.MethodPost, e.cpURL+"/v1/namespaces/default/approvals/"+gateway.ApprovalName(call)+"/decide", e.admin,
		map[string]any{"decision": "deny", "rationale": "not today"}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	done := e.waitPhase(exec, "Succeeded")
	require.Contains(t, done.body["status"].(map[string]any)["output"].(map[string]any)["answer"], "ApprovalDenied")
	require.Equal(t, 0, e.tools.count("/refund"))
	require.Contains(t, e.eventTypes(exec), "ApprovalDenied")
}
