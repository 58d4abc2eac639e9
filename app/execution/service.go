package execution

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

// Phases of an Execution (status.phase).
const (
	PhasePending   = "Pending"
	PhaseScheduled = "Scheduled"
	PhaseRunning   = "Running"
	PhaseWaiting   = "Waiting"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
	PhaseCancelled = "Cancelled"
)

// Phases returns every phase in lifecycle order.
func Phases() []string {
	return []string{PhasePending, PhaseScheduled, PhaseRunning, PhaseWaiting, PhaseSucceeded, PhaseFailed, PhaseCancelled}
}

// Finished reports whether phase is terminal.
func Finished(phase string) bool {
	return phase == PhaseSucceeded || phase == PhaseFailed || phase == PhaseCancelled
}

// DefaultMaxSteps is how many model calls one run makes at most.
const DefaultMaxSteps = 10

// Queue schedules runs as durable jobs (jobs.Executions).
type Queue interface {
	EnqueueExecution(ctx context.Context, tenant, namespace, name string) error
}

// TxQueue is a Queue that can also schedule in the store transaction that
// records the execution (jobs.Executions, on either store): then no crash
// can leave a Scheduled execution without its job. It reports false when
// it cannot, and the run is scheduled after the commit.
type TxQueue interface {
	EnqueueExecutionTx(ctx context.Context, tx any, tenant, namespace, name string) (bool, error)
}

// TokenIssuer issues workload tokens (workload.Issuer).
type TokenIssuer interface {
	Issue(ctx context.Context, p workload.IssueParams) (string, time.Time, error)
}

// Config configures a Service.
type Config struct {
	Store  store.Store
	Issuer TokenIssuer
	// Bus receives every event after it is stored; may be nil.
	Bus *events.Bus
	// Queue runs executions as jobs; nil runs them in goroutines of this
	// process (they then do not survive a restart).
	Queue Queue
	// ModelRouterURL is the model router's base URL.
	ModelRouterURL string
	// ToolGatewayURL is the tool gateway's base URL.
	ToolGatewayURL string
	// HTTPClient calls both; default a client with a 2-minute timeout.
	HTTPClient *http.Client
	// MaxSteps bounds the model calls of one run; default DefaultMaxSteps.
	MaxSteps int
	// ApprovalPoll is how long one long-poll of a call awaiting approval
	// waits; default 30s.
	ApprovalPoll time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.ApprovalPoll <= 0 {
		c.ApprovalPoll = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.ModelRouterURL = strings.TrimRight(c.ModelRouterURL, "/")
	c.ToolGatewayURL = strings.TrimRight(c.ToolGatewayURL, "/")
	return c
}

// Validate names the first missing field.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("execution config: Store is required")
	case c.Issuer == nil:
		return errors.New("execution config: Issuer is required")
	case c.ModelRouterURL == "":
		return errors.New("execution config: ModelRouterURL is required")
	case c.ToolGatewayURL == "":
		return errors.New("execution config: ToolGatewayURL is required")
	}
	return nil
}

// Service creates, runs, cancels and replays executions.
type Service struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
	// base bounds runs started in-process (no Queue).
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// running cancels the runs of this process by tenant/namespace/name.
	running map[string]context.CancelFunc
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	return &Service{cfg: cfg, log: cfg.Logger, now: cfg.Now, base: base, cancel: cancel, running: map[string]context.CancelFunc{}}, nil
}

// Close stops the runs this process started in-process and waits for them.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// CreateRequest is the body of POST /v1/namespaces/{ns}/executions.
type CreateRequest struct {
	// Agent names the Agent to run.
	Agent string `json:"agent"`
	// Input is the run's input; {"prompt": "…"} is what the built-in
	// runner reads.
	Input map[string]any `json:"input,omitempty"`
	// Prompt is a shorthand for input.prompt.
	Prompt string `json:"prompt,omitempty"`
	// Environment names the Environment; default the only one the agent
	// is deployed to.
	Environment string `json:"environment,omitempty"`
	// labels are added to the execution's (evaluations mark theirs).
	labels map[string]string
}

func key(ns, name string) resource.Key {
	return resource.Key{Kind: resource.KindExecution, Namespace: ns, Name: name}
}

func runKey(tenant, ns, name string) string { return tenant + "/" + ns + "/" + name }

// subject is the events' subject of an execution.
func subject(name string) string { return resource.KindExecution + "/" + name }

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Create validates req, records the execution and schedules its run. p is
// the caller, recorded as the execution's requester.
func (s *Service) Create(ctx context.Context, p auth.Principal, ns string, req CreateRequest) (*resource.Object, error) {
	if req.Agent == "" {
		return nil, fmt.Errorf("%w: agent is required", ErrInvalid)
	}
	input := map[string]any{}
	for k, v := range req.Input {
		input[k] = v
	}
	if req.Prompt != "" {
		if _, ok := input["prompt"]; ok {
			return nil, fmt.Errorf("%w: give the prompt either as prompt or as input.prompt, not both", ErrInvalid)
		}
		input["prompt"] = req.Prompt
	}
	if len(input) == 0 {
		return nil, fmt.Errorf("%w: input or prompt is required", ErrInvalid)
	}
	manifest, env, err := s.target(ctx, p.Tenant, ns, req.Agent, req.Environment)
	if err != nil {
		return nil, err
	}
	name, err := generateName(req.Agent)
	if err != nil {
		return nil, err
	}
	obj := &resource.Object{
		APIVersion: resource.GroupVersion, Kind: resource.KindExecution,
		Metadata: resource.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{LabelAgent: req.Agent, LabelEnvironment: env},
			Annotations: map[string]string{AnnotationRequestedBy: p.Subject}},
		Spec: map[string]any{"agentRef": map[string]any{"name": req.Agent}, "input": input, "environment": env, "manifest": manifest},
	}
	for k, v := range req.labels {
		obj.Metadata.Labels[k] = v
	}
	var created *resource.Object
	var evs []events.Event
	scheduled := false
	err = s.cfg.Store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		evs, scheduled = nil, false
		o, err := tx.ResourceCreate(ctx, obj)
		if err != nil {
			return fmt.Errorf("create execution: %w", err)
		}
		st := map[string]any{"phase": PhasePending}
		if created, err = tx.ResourceUpdateStatus(ctx, o.Key(), st, ""); err != nil {
			return fmt.Errorf("record execution status: %w", err)
		}
		ev, err := tx.EventInsert(ctx, s.event(p.Tenant, ns, name, events.ExecutionCreated, map[string]any{
			"agent": req.Agent, "environment": env, "manifest": manifest, "requestedBy": p.Subject, "phase": PhasePending}))
		if err != nil {
			return err
		}
		evs = append(evs, ev)
		q, ok := s.cfg.Queue.(TxQueue)
		if !ok {
			return nil
		}
		if scheduled, err = q.EnqueueExecutionTx(ctx, tx, p.Tenant, ns, name); err != nil || !scheduled {
			return err
		}
		if created, err = tx.ResourceUpdateStatus(ctx, o.Key(), map[string]any{"phase": PhaseScheduled}, created.Metadata.ResourceVersion); err != nil {
			return fmt.Errorf("record execution status: %w", err)
		}
		ev, err = tx.EventInsert(ctx, s.event(p.Tenant, ns, name, events.ExecutionScheduled, map[string]any{"phase": PhaseScheduled}))
		evs = append(evs, ev)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.publish(evs)
	if scheduled {
		return created, nil
	}
	return s.schedule(ctx, p.Tenant, ns, created)
}

// schedule moves a Pending execution to Scheduled and hands it to the
// queue (or to a goroutine without one).
func (s *Service) schedule(ctx context.Context, tenant, ns string, obj *resource.Object) (*resource.Object, error) {
	name := obj.Metadata.Name
	out, err := s.transition(ctx, tenant, ns, name, []string{PhasePending}, PhaseScheduled, nil,
		events.ExecutionScheduled, map[string]any{"phase": PhaseScheduled})
	if err != nil {
		return nil, err
	}
	if s.cfg.Queue != nil {
		if err := s.cfg.Queue.EnqueueExecution(ctx, tenant, ns, name); err != nil {
			_, _ = s.finish(context.WithoutCancel(ctx), tenant, ns, name, PhaseFailed, nil, "could not be scheduled: "+err.Error())
			return nil, fmt.Errorf("schedule execution %s: %w", name, err)
		}
		return out, nil
	}
	if s.cfg.Queue == nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.Run(s.base, tenant, ns, name); err != nil {
				s.log.Warn("execution run ended with an error", "execution", name, "namespace", ns, "err", err)
			}
		}()
	}
	return out, nil
}

// Labels and annotations of an Execution.
const (
	LabelAgent            = "warden.dev/agent"
	LabelEnvironment      = "warden.dev/environment"
	AnnotationRequestedBy = "warden.dev/requested-by"
)

// target resolves the manifest and environment a new execution runs:
// the agent's newest compiled manifest and an environment it is deployed
// to.
func (s *Service) target(ctx context.Context, tenant, ns, agent, env string) (manifest, environment string, err error) {
	err = s.cfg.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		a, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: ns, Name: agent})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: agent %q in namespace %q", ErrNotFound, agent, ns)
		}
		if err != nil {
			return fmt.Errorf("read agent %s: %w", agent, err)
		}
		st, err := resource.DecodeStatus[resource.AgentStatus](a)
		if err != nil || st.CompiledManifest == "" {
			return fmt.Errorf("%w: agent %q has no compiled manifest yet", ErrConflict, agent)
		}
		manifest = st.CompiledManifest
		envs, err := deployedTo(ctx, tx, ns, agent)
		if err != nil {
			return err
		}
		switch {
		case len(envs) == 0:
			return fmt.Errorf("%w: agent %q is not deployed in namespace %q", ErrConflict, agent, ns)
		case env == "" && len(envs) == 1:
			environment = envs[0]
		case env == "":
			return fmt.Errorf("%w: environment is required: agent %q is deployed to %s", ErrInvalid, agent, strings.Join(envs, ", "))
		case !slices.Contains(envs, env):
			return fmt.Errorf("%w: agent %q is not deployed to environment %q", ErrConflict, agent, env)
		default:
			environment = env
		}
		return nil
	})
	return manifest, environment, err
}

// deployedTo lists the environments agent has a Deployment to, sorted.
func deployedTo(ctx context.Context, tx store.Reader, ns, agent string) ([]string, error) {
	var envs []string
	deps, err := deploymentsOf(ctx, tx, ns, agent)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		ds, _ := resource.DecodeSpec[resource.DeploymentSpec](d)
		if !slices.Contains(envs, ds.Environment) {
			envs = append(envs, ds.Environment)
		}
	}
	slices.Sort(envs)
	return envs, nil
}

// deploymentsOf lists agent's Deployments in ns.
func deploymentsOf(ctx context.Context, tx store.Reader, ns, agent string) ([]*resource.Object, error) {
	var out []*resource.Object
	cont := ""
	for {
		l, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindDeployment, Namespace: ns, Limit: store.MaxPageSize, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("list deployments of %s: %w", ns, err)
		}
		for _, d := range l.Items {
			ds, err := resource.DecodeSpec[resource.DeploymentSpec](d)
			if err == nil && ds.AgentRef.Name == agent && ds.Environment != "" {
				out = append(out, d)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		cont = l.Continue
	}
}

// generateName returns "<agent>-<5 random characters>", at most 63 long.
func generateName(agent string) (string, error) {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate execution name: %w", err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	prefix := strings.TrimRight(agent[:min(len(agent), 57)], "-.")
	return prefix + "-" + string(b), nil
}

// Get reads one execution.
func (s *Service) Get(ctx context.Context, tenant, ns, name string) (*resource.Object, error) {
	var obj *resource.Object
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		var err error
		obj, err = tx.ResourceGet(ctx, key(ns, name))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: execution %q in namespace %q", ErrNotFound, name, ns)
	}
	return obj, err
}

// phaseOf reads status.phase.
func phaseOf(o *resource.Object) string {
	p, _ := o.Status["phase"].(string)
	return p
}

func (s *Service) event(tenant, ns, name, typ string, data map[string]any) events.Event {
	return events.Event{Type: typ, Time: s.now().UTC(), Tenant: tenant, Namespace: ns, Subject: subject(name), Data: data}
}

func (s *Service) publish(evs []events.Event) {
	if s.cfg.Bus == nil {
		return
	}
	for _, ev := range evs {
		s.cfg.Bus.Publish(ev)
	}
}

// transition moves an execution whose phase is one of from to phase to,
// letting mutate change the rest of the status, and records an event of
// type typ (none when typ is empty), all in one transaction. ErrConflict
// when the phase is not one of from.
func (s *Service) transition(ctx context.Context, tenant, ns, name string, from []string, to string,
	mutate func(st map[string]any), typ string, data map[string]any) (*resource.Object, error) {
	var out *resource.Object
	var evs []events.Event
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		o, err := tx.ResourceGet(ctx, key(ns, name))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: execution %q in namespace %q", ErrNotFound, name, ns)
		}
		if err != nil {
			return err
		}
		if cur := phaseOf(o); !slices.Contains(from, cur) {
			return fmt.Errorf("%w: execution %q is %s", ErrConflict, name, cur)
		}
		st := map[string]any{}
		for k, v := range o.Status {
			st[k] = v
		}
		st["phase"] = to
		if mutate != nil {
			mutate(st)
		}
		if out, err = tx.ResourceUpdateStatus(ctx, o.Key(), st, o.Metadata.ResourceVersion); err != nil {
			return fmt.Errorf("update execution %s: %w", name, err)
		}
		if typ != "" {
			ev, err := tx.EventInsert(ctx, s.event(tenant, ns, name, typ, data))
			if err != nil {
				return fmt.Errorf("record %s: %w", typ, err)
			}
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.publish(evs)
	return out, nil
}

// record appends an event about a running execution without changing it.
func (s *Service) record(ctx context.Context, tenant, ns, name, typ string, data map[string]any) error {
	var ev events.Event
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		ev, err = tx.EventInsert(ctx, s.event(tenant, ns, name, typ, data))
		return err
	})
	if err != nil {
		return fmt.Errorf("record %s: %w", typ, err)
	}
	s.publish([]events.Event{ev})
	return nil
}

// unfinished are the phases a run may still leave.
var unfinished = []string{PhasePending, PhaseScheduled, PhaseRunning, PhaseWaiting}

// finish moves a run to a terminal phase: Succeeded with output, or Failed
// or Cancelled with a reason. The event is ExecutionSucceeded or
// ExecutionFailed (SPEC.md names no cancellation event: a cancelled run's
// ExecutionFailed says phase Cancelled).
func (s *Service) finish(ctx context.Context, tenant, ns, name, phase string, output map[string]any, reason string) (*resource.Object, error) {
	now := timestamp(s.now())
	typ := events.ExecutionFailed
	data := map[string]any{"phase": phase}
	if phase == PhaseSucceeded {
		typ = events.ExecutionSucceeded
	} else {
		data["reason"] = reason
	}
	return s.transition(ctx, tenant, ns, name, unfinished, phase, func(st map[string]any) {
		st["completedAt"] = now
		if output != nil {
			st["output"] = output
		}
		if reason != "" {
			st["error"] = reason
		}
	}, typ, data)
}

// Cancel ends an unfinished execution: its phase becomes Cancelled at
// once, and a run of this process stops (a run elsewhere stops at its next
// step, when it sees the phase).
func (s *Service) Cancel(ctx context.Context, p auth.Principal, ns, name string) (*resource.Object, error) {
	out, err := s.finish(ctx, p.Tenant, ns, name, PhaseCancelled, nil, "cancelled by "+p.Subject)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	stop := s.running[runKey(p.Tenant, ns, name)]
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	return out, nil
}
