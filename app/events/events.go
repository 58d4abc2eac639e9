// Package events defines Warden's internal events (the exact names of
// SPEC.md) and an in-process bus. Events are also persisted through the store
// so that later services and the trace service can read them.
package events

import (
	"sync"
	"time"
)

// Event names, exactly as SPEC.md lists them.
const (
	ResourceApplied    = "ResourceApplied"
	ResourceValidated  = "ResourceValidated"
	AgentCompiled      = "AgentCompiled"
	ExecutionCreated   = "ExecutionCreated"
	ExecutionScheduled = "ExecutionScheduled"
	ExecutionStarted   = "ExecutionStarted"
	ExecutionSucceeded = "ExecutionSucceeded"
	ExecutionFailed    = "ExecutionFailed"
	ModelCallStarted   = "ModelCallStarted"
	ModelCallCompleted = "ModelCallCompleted"
	ProviderSwitched   = "ProviderSwitched"
	ToolCallRequested  = "ToolCallRequested"
	ToolCallApproved   = "ToolCallApproved"
	ToolCallCompleted  = "ToolCallCompleted"
	MemoryRead         = "MemoryRead"
	MemoryWritten      = "MemoryWritten"
	KnowledgeRetrieved = "KnowledgeRetrieved"
	ArtifactCreated    = "ArtifactCreated"
	HookDecision       = "HookDecision"
	PolicyDenied       = "PolicyDenied"
	ApprovalRequested  = "ApprovalRequested"
	ApprovalGranted    = "ApprovalGranted"
	ApprovalDenied     = "ApprovalDenied"
	A2AMessageSent     = "A2AMessageSent"
	A2AMessageReceived = "A2AMessageReceived"
	AgBOMUpdated       = "AgBOMUpdated"
	BudgetExceeded     = "BudgetExceeded"
)

// Event is one internal event.
type Event struct {
	Seq       int64     `json:"seq"`
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	Tenant    string    `json:"tenant"`
	Namespace string    `json:"namespace,omitempty"`
	// Subject names what the event is about, as "Kind/name".
	Subject string         `json:"subject,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// Bus fans events out to in-process subscribers after they are persisted.
// Handlers must not block; a slow consumer should queue on its own side.
type Bus struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(Event)
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[int]func(Event){}} }

// Subscribe registers fn for every published event and returns a function
// that unregisters it.
func (b *Bus) Subscribe(fn func(Event)) (unsubscribe func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

// Publish delivers ev to every subscriber.
func (b *Bus) Publish(ev Event) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, fn := range b.subs {
		fn(ev)
	}
}
