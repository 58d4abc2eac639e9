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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Operations.
const (
	opChat       = "chat"
	opEmbeddings = "embeddings"
)

// call is one model call on its way through the router.
type call struct {
	r        *Router
	p        auth.Principal
	ns       string
	snap     *snapshot
	op       string
	req      *ChatRequest
	embed    map[string]json.RawMessage
	settings policy.Settings
	agent    *agentRoute
	cands    []*modelEntry
	dec      Decision
	start    time.Time
	evs      []events.Event
	charges  []store.UsageCharge
	span     trace.Span
	started  bool
}

// newCall authenticates nothing (the handler did): it resolves the
// caller's namespace, checks that it may call models, and finds the
// candidates: the agent's route, or the Model the caller names.
func (r *Router) newCall(ctx context.Context, w *reply, op, model, execution string) (*call, *apierr.Error) {
	p := w.p
	c := &call{r: r, p: p, op: op, start: r.now()}
	c.dec = Decision{ID: newID(), Time: c.start.UTC(), Agent: p.Agent, Caller: p.Subject, Environment: p.Environment,
		Execution: execution, Operation: op, Candidates: []Candidate{}}
	if h := w.header(HeaderExecution); h != "" && c.dec.Execution == "" {
		c.dec.Execution = h
	}
	if len(c.dec.Execution) > maxNameLen {
		return nil, invalid("the execution is longer than %d characters", maxNameLen)
	}
	ns, e := namespaceOf(w)
	if e != nil {
		return nil, e
	}
	c.ns = ns
	if err := r.cfg.Authz.Authorize(ctx, p, authz.VerbCreate, ns, authz.ObjModelCalls); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			return nil, apierr.New(apierr.CodeForbidden, "%s may not call models in namespace %q", p.Subject, ns)
		}
		return nil, internal(r, ctx, err)
	}
	snap, err := r.catalog.get(ctx, p.Tenant)
	if err != nil {
		return nil, internal(r, ctx, err)
	}
	c.snap = snap
	if e := c.resolve(model); e != nil {
		c.dec.Outcome = "refused"
		c.dec.Error = &errorRecord{Code: e.Code, Message: e.Message}
		if c.dec.Route != "" {
			c.record()
		}
		return nil, e
	}
	var bound []string
	if c.agent != nil {
		bound = c.agent.bound
	}
	c.settings = snap.policies.Settings(&policy.Input{Namespace: ns, Environment: p.Environment, Agent: p.Agent, Bound: bound})
	for _, me := range c.cands {
		cd := Candidate{Outcome: outcomeNotTried}
		if me != nil {
			cd.Model, cd.RouteID, cd.Provider = me.name, me.routeID, me.spec.Provider
		}
		c.dec.Candidates = append(c.dec.Candidates, cd)
	}
	return c, nil
}

// resolve finds the route. An agent follows its compiled manifest's
// route; naming one of the route's Models starts from it. A person or an
// API key not bound to an agent names a Model of the namespace (or an
// agent, whose route it then follows).
func (c *call) resolve(model string) *apierr.Error {
	snap, ns := c.snap, c.ns
	if c.p.Agent != "" {
		ar := snap.agents[nsName{ns, c.p.Agent}]
		if ar == nil || ar.manifest == "" {
			return apierr.New(apierr.CodeForbidden, "agent %q has no compiled manifest in namespace %q, so no model route", c.p.Agent, ns)
		}
		c.agent = ar
		if model == "" || model == ar.name {
			c.dec.Route, c.dec.RouteKind = ar.name, "agent"
			c.cands = ar.models
			c.fillUnknown(ar)
			return nil
		}
		c.dec.Route, c.dec.RouteKind = model, "model"
		at := -1
		for i, me := range ar.models {
			if me != nil && (me.name == model || me.routeID == model) {
				at = i
				break
			}
		}
		if at < 0 {
			return apierr.New(apierr.CodeForbidden, "model %q is not on the route of agent %q (%s)", model, ar.name, strings.Join(ar.routeIDs, ", ")).
				WithDetails(map[string]any{"agent": ar.name, "route": ar.routeIDs})
		}
		c.cands = append([]*modelEntry{ar.models[at]}, append(append([]*modelEntry{}, ar.models[:at]...), ar.models[at+1:]...)...)
		return nil
	}
	if model == "" {
		return invalid("model is required: name a Model of namespace %q, or an agent to follow its route", ns)
	}
	me := snap.models[nsName{ns, model}]
	if me == nil {
		me = snap.byRoute[nsName{ns, model}]
	}
	if me != nil {
		c.dec.Route, c.dec.RouteKind = me.name, "model"
		c.cands = []*modelEntry{me}
		return nil
	}
	if ar := snap.agents[nsName{ns, model}]; ar != nil && ar.manifest != "" {
		c.agent = ar
		c.dec.Route, c.dec.RouteKind = ar.name, "agent"
		c.cands = ar.models
		c.fillUnknown(ar)
		return nil
	}
	return apierr.New(apierr.CodeNotFound, "no Model or agent %q in namespace %q", model, ns)
}

// fillUnknown keeps route ids without a Model as entries the router
// skips, so that an explanation lists them.
func (c *call) fillUnknown(ar *agentRoute) {
	out := make([]*modelEntry, len(ar.models))
	for i, me := range ar.models {
		if me == nil {
			me = &modelEntry{ns: c.ns, routeID: ar.routeIDs[i], broken: "no Model of namespace " + c.ns + " has route id " + ar.routeIDs[i]}
		}
		out[i] = me
	}
	c.cands = out
}

// skip decides whether candidate i can be called: capabilities, policy,
// budgets and its API key. It fills the candidate's record when not, and
// returns a hard budget error that refuses the whole call.
func (c *call) skip(ctx context.Context, i int, n Needs) (skipped bool, key string, refuse *apierr.Error, err error) {
	me, cd := c.cands[i], &c.dec.Candidates[i]
	cd.Provider = me.spec.Provider
	sk := func(reason, detail string) { cd.Outcome, cd.Reason, cd.Detail = outcomeSkipped, reason, detail }
	if me.broken != "" {
		sk(reasonUnavailable, me.broken)
		return true, "", nil, nil
	}
	if capName, detail := lacks(me, c.op, n); capName != "" {
		sk(reasonCapability, detail)
		cd.Capability = capName
		return true, "", nil, nil
	}
	args := map[string]any{"operation": c.op, "stream": n.Streaming, "toolUse": n.ToolUse, "vision": n.Vision,
		"jsonMode": n.JSONMode, "estimatedTokens": n.Tokens, "modelName": me.name, "provider": me.spec.Provider}
	var bound []string
	if c.agent != nil {
		bound = c.agent.bound
	}
	d := c.snap.policies.DecideModel(&policy.Input{Namespace: c.ns, Environment: c.p.Environment, Agent: c.p.Agent,
		Bound: bound, Model: me.routeID, Args: args, Now: c.start})
	if d.Denied() {
		sk(reasonPolicy, fmt.Sprintf("%s denied model %s (%s) in environment %q at hook modelCall: %s", d.Ref(), me.name, me.routeID, c.p.Environment, d.Message))
		cd.Policy = map[string]any{"policyId": d.Policy, "policyVersion": d.Version, "rule": d.Rule}
		c.event(events.PolicyDenied, map[string]any{"hook": resource.HookModelCall, "policy": d.Ref(), "rule": d.Rule,
			"model": me.name, "routeId": me.routeID, "message": d.Message, "decision": c.dec.ID})
		return true, "", nil, nil
	}
	if bs := c.budgets(me); len(bs) > 0 {
		e, b, warnings, err := c.checkBudgets(ctx, bs)
		if err != nil {
			return false, "", nil, err
		}
		c.dec.Warnings = append(c.dec.Warnings, warnings...)
		if e != nil {
			cd.Limit = map[string]any{"policy": b.Policy, "limit": b.Index, "scope": b.Scope, "match": b.Match, "window": b.Duration.String()}
			sk(reasonBudget, e.Message)
			if b.Scope != scopeModel {
				return true, "", e, nil
			}
			return true, "", nil, nil
		}
	}
	key, err = c.r.catalog.apiKey(ctx, c.p.Tenant, me)
	if err != nil {
		ref := me.spec.APIKeySecretRef
		sk(reasonUnavailable, fmt.Sprintf("the API key secret %s (key %s) cannot be resolved", ref.Name, ref.Key))
		c.r.log.WarnContext(ctx, "model API key unresolved", "tenant", c.p.Tenant, "model", me.ns+"/"+me.name, "err", err)
		return true, "", nil, nil
	}
	return false, key, nil, nil
}

// lacks names the capability a Model lacks for the request, "" when none.
func lacks(me *modelEntry, op string, n Needs) (string, string) {
	caps := me.spec.Capabilities
	if op == opEmbeddings {
		if me.spec.Provider == ProviderAnthropic {
			return "embeddings", "provider anthropic has no embeddings API"
		}
		return "", ""
	}
	switch {
	case n.ToolUse && !caps.ToolUse:
		return "toolUse", "the request has tools and the Model has no capabilities.toolUse"
	case n.Vision && !caps.Vision:
		return "vision", "the request has images and the Model has no capabilities.vision"
	case n.JSONMode && !caps.JSONMode:
		return "jsonMode", "the request asks for a JSON response_format and the Model has no capabilities.jsonMode"
	case n.Streaming && !caps.Streaming:
		return "streaming", "the request streams and the Model has no capabilities.streaming"
	case caps.ContextWindow > 0 && n.Tokens > caps.ContextWindow:
		return "contextWindow", fmt.Sprintf("the request needs about %d tokens (prompt estimate plus max_tokens), more than the context window of %d", n.Tokens, caps.ContextWindow)
	}
	return "", ""
}

// event queues an event of the call; they are written with its decision.
func (c *call) event(typ string, data map[string]any) {
	subject := "Model/" + c.dec.Route
	if c.dec.RouteKind == "agent" {
		subject = "Agent/" + c.dec.Route
	}
	if c.dec.Execution != "" {
		data["execution"] = c.dec.Execution
	}
	if c.p.Agent != "" {
		data["agent"] = c.p.Agent
	}
	c.evs = append(c.evs, events.Event{Type: typ, Time: c.r.now().UTC(), Tenant: c.p.Tenant, Namespace: c.ns, Subject: subject, Data: data})
	if c.span != nil {
		c.span.AddEvent(typ)
	}
}

// record queues the decision, events and charges for the recorder.
func (c *call) record() {
	b, err := json.Marshal(c.dec)
	if err != nil {
		c.r.log.Error("encode route decision", "err", err)
		return
	}
	c.r.rec.add(&record{tenant: c.p.Tenant, events: c.evs, charges: c.charges, decision: store.RouteDecision{
		ID: c.dec.ID, Namespace: c.ns, Execution: c.dec.Execution, Route: c.dec.Route, Agent: c.p.Agent, Time: c.dec.Time, Data: b}})
}

// finish ends the call: outcome, duration, ModelCallCompleted, span,
// record.
func (c *call) finish(outcome string, e *apierr.Error) {
	c.dec.Outcome = outcome
	if e != nil {
		c.dec.Error = &errorRecord{Code: e.Code, Message: e.Message}
	}
	c.dec.DurationMs = float64(c.r.now().Sub(c.start).Microseconds()) / 1000
	if c.started {
		data := map[string]any{"decision": c.dec.ID, "model": c.dec.Selected, "outcome": outcome, "operation": c.op,
			"stream": c.dec.Stream, "cost": c.dec.Cost, "durationMs": c.dec.DurationMs}
		if u := c.dec.Usage; u != nil {
			data["promptTokens"], data["completionTokens"], data["totalTokens"] = u.PromptTokens, u.CompletionTokens, u.TotalTokens
		}
		if e != nil {
			data["error"] = e.Code
		}
		c.event(events.ModelCallCompleted, data)
	}
	if c.span != nil {
		c.span.SetAttributes(attribute.String("warden.route.decision", c.dec.ID), attribute.String("warden.route.outcome", outcome))
		if c.dec.Selected != "" {
			c.span.SetAttributes(attribute.String("gen_ai.response.model", c.selectedModelID()))
		}
		if u := c.dec.Usage; u != nil {
			c.span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", u.PromptTokens), attribute.Int64("gen_ai.usage.output_tokens", u.CompletionTokens))
		}
		if e != nil {
			c.span.SetStatus(codes.Error, e.Code)
			c.span.SetAttributes(attribute.String("error.type", e.Code))
		}
		c.span.End()
	}
	c.record()
}

func (c *call) selectedModelID() string {
	for i, cd := range c.dec.Candidates {
		if cd.Model == c.dec.Selected && c.cands[i] != nil {
			return c.cands[i].spec.Model
		}
	}
	return ""
}

// begin starts the call's span and its ModelCallStarted event before the
// first provider attempt, and ProviderSwitched before each later one.
func (c *call) attempt(ctx context.Context, i int, prev int, prevErr *ProviderError) context.Context {
	me := c.cands[i]
	if !c.started {
		c.started = true
		c.event(events.ModelCallStarted, map[string]any{"decision": c.dec.ID, "model": me.name, "routeId": me.routeID,
			"provider": me.spec.Provider, "operation": c.op, "stream": c.dec.Stream})
		ctx, c.span = c.r.tracer.Start(ctx, c.op+" "+c.dec.Route, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				attribute.String("gen_ai.operation.name", c.op),
				attribute.String("gen_ai.request.model", me.spec.Model),
				attribute.String("gen_ai.provider.name", me.spec.Provider),
				attribute.String("gen_ai.system", me.spec.Provider),
				attribute.String("warden.route", c.dec.Route),
				attribute.String("warden.namespace", c.ns),
				attribute.String("warden.agent", c.p.Agent),
				attribute.String("warden.execution", c.dec.Execution),
			))
		if c.req != nil {
			if c.req.MaxTokens > 0 {
				c.span.SetAttributes(attribute.Int64("gen_ai.request.max_tokens", c.req.MaxTokens))
			}
			if c.req.Temperature != nil {
				c.span.SetAttributes(attribute.Float64("gen_ai.request.temperature", *c.req.Temperature))
			}
		}
		return ctx
	}
	if prev >= 0 {
		from := c.cands[prev]
		data := map[string]any{"decision": c.dec.ID, "from": from.name, "fromRouteId": from.routeID, "to": me.name, "toRouteId": me.routeID}
		if prevErr != nil {
			data["reason"], data["status"] = prevErr.reason(), prevErr.Status
		}
		c.event(events.ProviderSwitched, data)
		c.span.SetAttributes(attribute.String("gen_ai.provider.name", me.spec.Provider), attribute.String("gen_ai.request.model", me.spec.Model))
	}
	return ctx
}

// refusal is the caller's error when no candidate answered.
func (c *call) refusal(last *ProviderError) *apierr.Error {
	details := map[string]any{"route": c.dec.Route, "decision": c.dec.ID}
	if last != nil {
		if last.Status == http.StatusTooManyRequests {
			e := apierr.New(apierr.CodeRateLimited, "every model on route %s is rate limited; the last answered: %s", c.dec.Route, last.Error()).WithDetails(details)
			if s := retryAfterSeconds(last.RetryAfter, c.r.now()); s > 0 {
				details["retryAfterSeconds"] = s
			}
			return e
		}
		return apierr.New(apierr.CodeUnavailable, "no model on route %s answered; the last failed: %s", c.dec.Route, last.Error()).WithDetails(details)
	}
	var caps []string
	for _, cd := range c.dec.Candidates {
		if cd.Reason == reasonPolicy {
			details["policyId"], details["policyVersion"], details["rule"] = cd.Policy["policyId"], cd.Policy["policyVersion"], cd.Policy["rule"]
			return apierr.New(apierr.CodePolicyDenied, "%s", cd.Detail).WithDetails(details)
		}
	}
	for _, cd := range c.dec.Candidates {
		if cd.Reason == reasonBudget {
			return apierr.New(apierr.CodeBudgetExceeded, "%s", cd.Detail).WithDetails(details)
		}
		if cd.Reason == reasonCapability {
			caps = append(caps, cd.Model+": "+cd.Detail)
		}
	}
	if len(caps) > 0 {
		return invalid("no model on route %s can serve this request (%s)", c.dec.Route, strings.Join(caps, "; ")).WithDetails(details)
	}
	return apierr.New(apierr.CodeUnavailable, "no model on route %s can be called", c.dec.Route).WithDetails(details)
}

// callerError is the answer to a provider's 4xx that is the caller's
// fault: the provider's message, the router's code.
func callerError(pe *ProviderError, model string) *apierr.Error {
	code := apierr.CodeInvalidRequest
	switch pe.Status {
	case http.StatusNotFound:
		code = apierr.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		code = apierr.CodePayloadTooLarge
	}
	return apierr.New(code, "model %s refused the request: %s", model, pe.Message).
		WithDetails(map[string]any{"providerStatus": pe.Status, "providerType": pe.Type})
}

// outcome of an attempt.
type attemptResult int

const (
	attemptNext attemptResult = iota // switch to the next candidate
	attemptDone                      // answered, or failed for good
)

// handleAttemptError records a failed attempt and says whether to switch.
func (c *call) handleAttemptError(ctx context.Context, w *reply, resp responder, i int, err error, last **ProviderError) attemptResult {
	cd := &c.dec.Candidates[i]
	cd.Outcome, cd.Reason = outcomeFailed, reasonError
	if ctx.Err() != nil {
		cd.Detail = "the caller went away"
		c.finish("cancelled", nil)
		return attemptDone
	}
	var pe *ProviderError
	var ae *apierr.Error
	switch {
	case errors.As(err, &pe):
		cd.Status, cd.Detail = pe.Status, pe.Error()
		if pe.switchable() {
			*last = pe
			return attemptNext
		}
		e := callerError(pe, c.cands[i].name)
		c.finish(outcomeFailed, e)
		resp.fail(w, e)
	case errors.As(err, &ae):
		cd.Detail = ae.Message
		c.finish(outcomeFailed, ae)
		resp.fail(w, ae)
	default:
		e := internal(c.r, ctx, err)
		cd.Detail = "internal error"
		c.finish(outcomeFailed, e)
		resp.fail(w, e)
	}
	return attemptDone
}

// serve runs the call: each candidate in order until one answers.
func (c *call) serve(ctx context.Context, w *reply, resp responder) {
	n := c.dec.Needs
	if c.req != nil {
		n = c.req.needs()
		c.dec.Stream = c.req.Stream
	}
	c.dec.Needs = n
	var last *ProviderError
	prev := -1
	for i := range c.cands {
		skipped, key, refuse, err := c.skip(ctx, i, n)
		if err != nil {
			e := internal(c.r, ctx, err)
			c.finish("refused", e)
			resp.fail(w, e)
			return
		}
		if refuse != nil {
			c.finish("refused", refuse)
			resp.fail(w, refuse)
			return
		}
		if skipped {
			continue
		}
		actx := c.attempt(ctx, i, prev, last)
		prev = i
		var res attemptResult
		switch {
		case c.op == opEmbeddings:
			res = c.embedOnce(actx, w, resp, i, key, &last)
		case c.req.Stream:
			res = c.streamOnce(actx, w, resp, i, key, &last)
		default:
			res = c.chatOnce(actx, w, resp, i, key, &last)
		}
		if res == attemptDone {
			return
		}
	}
	e := c.refusal(last)
	if last != nil {
		c.finish(outcomeFailed, e)
	} else {
		c.finish("refused", e)
	}
	resp.fail(w, e)
}

func (c *call) selected(i int, u Usage) {
	me := c.cands[i]
	c.dec.Candidates[i].Outcome = outcomeSelected
	c.dec.Selected = me.name
	c.dec.Usage = &u
	c.dec.Cost = price(me, u)
	c.charges = charges(c.budgets(me), u, c.dec.Cost)
}

func (c *call) headers(w *reply, i int) {
	w.set(HeaderDecision, c.dec.ID)
	w.set(HeaderModel, c.cands[i].name)
	for _, warn := range c.dec.Warnings {
		w.add("Warning", `299 warden "`+strings.ReplaceAll(warn, `"`, `'`)+`"`)
	}
}

func (c *call) chatOnce(ctx context.Context, w *reply, resp responder, i int, key string, last **ProviderError) attemptResult {
	me := c.cands[i]
	actx, cancel := context.WithTimeout(ctx, c.r.cfg.AttemptTimeout)
	t0 := time.Now()
	ans, err := me.prov.chat(actx, c.req, key)
	cancel()
	c.dec.Candidates[i].LatencyMs = float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		return c.handleAttemptError(ctx, w, resp, i, err, last)
	}
	c.selected(i, ans.Usage)
	c.headers(w, i)
	werr := resp.answer(w, ans.Body)
	if werr != nil && ctx.Err() != nil {
		c.finish("cancelled", nil)
		return attemptDone
	}
	c.finish("succeeded", nil)
	return attemptDone
}

func (c *call) embedOnce(ctx context.Context, w *reply, resp responder, i int, key string, last **ProviderError) attemptResult {
	me := c.cands[i]
	body := make(map[string]json.RawMessage, len(c.embed))
	for k, v := range c.embed {
		body[k] = v
	}
	body["model"], _ = json.Marshal(me.spec.Model)
	b, err := json.Marshal(body)
	if err != nil {
		return c.handleAttemptError(ctx, w, resp, i, err, last)
	}
	actx, cancel := context.WithTimeout(ctx, c.r.cfg.AttemptTimeout)
	t0 := time.Now()
	ans, err := me.prov.embed(actx, b, key)
	cancel()
	c.dec.Candidates[i].LatencyMs = float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		return c.handleAttemptError(ctx, w, resp, i, err, last)
	}
	c.selected(i, ans.Usage)
	c.headers(w, i)
	_ = resp.answer(w, ans.Body)
	c.finish("succeeded", nil)
	return attemptDone
}

// usageMarker finds chunks that carry usage without decoding the others.
var usageMarker = []byte(`"usage":{`)

// streamOnce streams from candidate i. A failure before the first chunk
// lets the router switch; after it, the stream ends with an error event.
func (c *call) streamOnce(ctx context.Context, w *reply, resp responder, i int, key string, last **ProviderError) attemptResult {
	me := c.cands[i]
	actx, cancel := context.WithCancel(ctx)
	// The attempt timeout bounds the wait for the first chunk only.
	timer := time.AfterFunc(c.r.cfg.AttemptTimeout, cancel)
	t0 := time.Now()
	st, err := me.prov.stream(actx, c.req, key)
	if err != nil {
		timer.Stop()
		cancel()
		return c.handleAttemptError(ctx, w, resp, i, timeoutOr(err, actx, ctx), last)
	}
	first, err := st.Next()
	timer.Stop()
	c.dec.Candidates[i].LatencyMs = float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		_ = st.Close()
		cancel()
		return c.handleAttemptError(ctx, w, resp, i, timeoutOr(err, actx, ctx), last)
	}
	c.dec.Candidates[i].Outcome = outcomeSelected
	c.dec.Selected = me.name
	c.headers(w, i)
	resp.begin(w)
	// The status and headers are decided: the chunks stream once the
	// handler has returned, each read from the provider as the server asks
	// for the next.
	rl := &relay{c: c, ctx: ctx, w: w, resp: resp, i: i, st: st, first: first, cancel: cancel}
	w.stream(rl.next, rl.stop)
	return attemptDone
}

// relay forwards the chunks of candidate i's stream, the first one
// already read, one a step.
type relay struct {
	c      *call
	ctx    context.Context
	w      *reply
	resp   responder
	i      int
	st     Stream
	first  []byte
	cancel context.CancelFunc
	usage  Usage
	chunks int
	// finished says the call's outcome is recorded.
	finished bool
}

// next writes the next chunk to w, or the stream's end (its end event or
// its error event) and records the outcome; false once it has.
func (rl *relay) next() bool {
	data := rl.first
	if data != nil {
		rl.first = nil
	} else {
		var err error
		if data, err = rl.st.Next(); err != nil {
			rl.end(err)
			return false
		}
	}
	rl.forward(data)
	return true
}

// forward writes one provider chunk; a chunk with usage only is kept back
// unless the caller asked for it.
func (rl *relay) forward(data []byte) {
	if bytes.Contains(data, usageMarker) {
		var u struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   *Usage            `json:"usage"`
		}
		if json.Unmarshal(data, &u) == nil && u.Usage != nil {
			rl.usage = *u.Usage
			if len(u.Choices) == 0 && !rl.c.req.IncludeUsage {
				return
			}
		}
	}
	rl.chunks++
	_ = rl.resp.chunk(rl.w, data)
}

// end writes the stream's end after the provider's ended with err.
func (rl *relay) end(err error) {
	c, i := rl.c, rl.i
	me := c.cands[i]
	rl.finished = true
	c.selected(i, rl.usage)
	if errors.Is(err, io.EOF) {
		if werr := rl.resp.end(rl.w, rl.usage); werr != nil {
			c.finish("cancelled", nil)
			return
		}
		c.finish("succeeded", nil)
		return
	}
	if rl.ctx.Err() != nil {
		c.dec.Candidates[i].Detail = "the caller went away after " + fmt.Sprint(rl.chunks) + " chunks"
		c.finish("cancelled", nil)
		return
	}
	msg := err.Error()
	var pe *ProviderError
	if errors.As(err, &pe) {
		c.dec.Candidates[i].Status = pe.Status
	}
	c.dec.Candidates[i].Outcome, c.dec.Candidates[i].Reason = outcomeFailed, reasonError
	c.dec.Candidates[i].Detail = fmt.Sprintf("failed mid-stream after %d chunks: %s", rl.chunks, msg)
	e := apierr.New(apierr.CodeUnavailable, "model %s failed mid-stream: %s", me.name, msg).
		WithDetails(map[string]any{"decision": c.dec.ID})
	_ = rl.resp.streamError(rl.w, e)
	c.finish(outcomeFailed, e)
}

// stop releases the provider's stream once the answer is sent or the
// caller went away (ended false: the server could not write to it).
func (rl *relay) stop(ended bool) {
	defer rl.cancel()
	defer func() { _ = rl.st.Close() }()
	if ended || rl.finished {
		return
	}
	rl.finished = true
	rl.c.selected(rl.i, rl.usage)
	rl.c.dec.Candidates[rl.i].Detail = "the caller went away after " + fmt.Sprint(rl.chunks) + " chunks"
	rl.c.finish("cancelled", nil)
}

// timeoutOr reports a first-chunk timeout (the attempt's context ended,
// the caller's did not) as a provider timeout, which switches.
func timeoutOr(err error, actx, ctx context.Context) error {
	if actx.Err() != nil && ctx.Err() == nil {
		return &ProviderError{Transport: "timeout"}
	}
	return err
}

func internal(r *Router, ctx context.Context, err error) *apierr.Error {
	r.log.ErrorContext(ctx, "model router internal error", "err", err)
	return apierr.New(apierr.CodeInternal, "internal error")
}
