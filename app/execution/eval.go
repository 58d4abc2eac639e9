package execution

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
)

// Evaluation limits.
const (
	DefaultEvalTimeout = 2 * time.Minute
	MaxEvalTimeout     = 10 * time.Minute
	MaxEvalCases       = 100
)

// Labels of the executions an evaluation runs.
const (
	LabelEval     = "warden.dev/eval"
	LabelEvalCase = "warden.dev/eval-case"
)

// EvalRequest is the body of POST /v1/eval/{name}/run: a suite of cases
// run against one agent in one environment.
type EvalRequest struct {
	// Namespace is the agent's; default the credential's, else "default".
	Namespace   string `json:"namespace,omitempty"`
	Agent       string `json:"agent"`
	Environment string `json:"environment,omitempty"`
	// Timeout bounds the whole suite (Go duration); default 2m, at most
	// 10m. Cases still running then fail.
	Timeout string     `json:"timeout,omitempty"`
	Cases   []EvalCase `json:"cases"`
}

// EvalCase is one prompt and what its run must show.
type EvalCase struct {
	// Name is a DNS-1123 label unique in the suite.
	Name   string `json:"name"`
	Prompt string `json:"prompt"`
	// ExpectTools must all be called (tool names, "<system>.<action>").
	ExpectTools []string `json:"expectTools,omitempty"`
	// ExpectAnswer must occur in the answer (case-insensitive).
	ExpectAnswer string `json:"expectAnswer,omitempty"`
}

// EvalCaseResult is the verdict of one case.
type EvalCaseResult struct {
	Name      string `json:"name"`
	Execution string `json:"execution"`
	Phase     string `json:"phase"`
	Passed    bool   `json:"passed"`
	// Tools are the tools the run called, in order.
	Tools []string `json:"tools"`
	// Failures say why the case failed.
	Failures []string `json:"failures,omitempty"`
}

// EvalResult answers an evaluation.
type EvalResult struct {
	APIVersion  string           `json:"apiVersion"`
	Kind        string           `json:"kind"`
	Name        string           `json:"name"`
	Namespace   string           `json:"namespace"`
	Agent       string           `json:"agent"`
	Environment string           `json:"environment"`
	Passed      int              `json:"passed"`
	Failed      int              `json:"failed"`
	Cases       []EvalCaseResult `json:"cases"`
}

// Eval runs every case of suite name as an execution of req.Agent (all
// at once), waits for them within the timeout and judges each: the run
// succeeded, called every expected tool and its answer contains the
// expected text.
func (s *Service) Eval(ctx context.Context, p auth.Principal, name string, req EvalRequest) (*EvalResult, error) {
	timeout := DefaultEvalTimeout
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d <= 0 || d > MaxEvalTimeout {
			return nil, fmt.Errorf("%w: timeout must be a duration up to %s, got %q", ErrInvalid, MaxEvalTimeout, req.Timeout)
		}
		timeout = d
	}
	if !resource.IsDNS1123Label(name) {
		return nil, fmt.Errorf("%w: the suite name %q must be a DNS-1123 label", ErrInvalid, name)
	}
	if len(req.Cases) == 0 || len(req.Cases) > MaxEvalCases {
		return nil, fmt.Errorf("%w: a suite has 1 to %d cases, got %d", ErrInvalid, MaxEvalCases, len(req.Cases))
	}
	seen := map[string]bool{}
	for i, c := range req.Cases {
		if !resource.IsDNS1123Label(c.Name) || seen[c.Name] {
			return nil, fmt.Errorf("%w: cases[%d].name %q must be a unique DNS-1123 label", ErrInvalid, i, c.Name)
		}
		seen[c.Name] = true
		if c.Prompt == "" {
			return nil, fmt.Errorf("%w: cases[%d].prompt is required", ErrInvalid, i)
		}
	}
	res := &EvalResult{APIVersion: resource.GroupVersion, Kind: "EvalResult", Name: name, Namespace: req.Namespace, Agent: req.Agent}
	for _, c := range req.Cases {
		obj, err := s.Create(ctx, p, req.Namespace, CreateRequest{Agent: req.Agent, Prompt: c.Prompt, Environment: req.Environment,
			labels: map[string]string{LabelEval: name, LabelEvalCase: c.Name}})
		if err != nil {
			return nil, fmt.Errorf("%w (case %s)", err, c.Name)
		}
		res.Environment, _ = obj.Spec["environment"].(string)
		res.Cases = append(res.Cases, EvalCaseResult{Name: c.Name, Execution: obj.Metadata.Name})
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, c := range req.Cases {
		r := &res.Cases[i]
		err := s.Follow(wctx, p.Tenant, req.Namespace, r.Execution, 0, eventPollInterval, func(events.Event) error { return nil }, nil)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		obj, err := s.Get(ctx, p.Tenant, req.Namespace, r.Execution)
		if err != nil {
			return nil, err
		}
		judge(r, c, obj)
		if r.Passed {
			res.Passed++
		} else {
			res.Failed++
		}
	}
	return res, nil
}

// eventPollInterval is how often a wait looks for runs on other replicas.
const eventPollInterval = 2 * time.Second

// judge fills r's verdict from the case and its execution.
func judge(r *EvalCaseResult, c EvalCase, obj *resource.Object) {
	r.Phase = phaseOf(obj)
	out, _ := obj.Status["output"].(map[string]any)
	r.Tools = []string{}
	if ts, ok := out["tools"].([]any); ok {
		for _, t := range ts {
			if s, ok := t.(string); ok {
				r.Tools = append(r.Tools, s)
			}
		}
	}
	switch {
	case r.Phase == PhaseSucceeded:
	case Finished(r.Phase):
		msg, _ := obj.Status["error"].(string)
		r.Failures = append(r.Failures, fmt.Sprintf("the run ended %s: %s", r.Phase, msg))
	default:
		r.Failures = append(r.Failures, fmt.Sprintf("the run did not finish in time (phase %s)", r.Phase))
	}
	for _, t := range c.ExpectTools {
		if !slices.Contains(r.Tools, t) {
			r.Failures = append(r.Failures, fmt.Sprintf("expected a call of %s", t))
		}
	}
	answer, _ := out["answer"].(string)
	if c.ExpectAnswer != "" && !strings.Contains(strings.ToLower(answer), strings.ToLower(c.ExpectAnswer)) {
		r.Failures = append(r.Failures, fmt.Sprintf("expected the answer to contain %q", c.ExpectAnswer))
	}
	r.Passed = len(r.Failures) == 0
}
