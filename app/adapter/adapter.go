package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// Adapter receives compiled manifests and makes the agent runnable.
type Adapter interface {
	// Name is the runtime id Deployments name in spec.runtime, e.g. "local".
	Name() string
	// HandOver gives the adapter a new manifest. It must not keep or
	// modify the object after it returns without copying it.
	HandOver(ctx context.Context, manifest *resource.Object) error
}

// ErrUnknownAdapter means no adapter of the requested name is registered.
var ErrUnknownAdapter = errors.New("adapter: unknown runtime adapter")

// Registry holds runtime adapters by name. It is safe for concurrent use.
type Registry struct {
	adapters map[string]Adapter
	names    []string
}

// NewRegistry returns a registry of the given adapters; a later adapter
// with the same name replaces an earlier one.
func NewRegistry(adapters ...Adapter) *Registry {
	r := &Registry{adapters: make(map[string]Adapter, len(adapters))}
	for _, a := range adapters {
		if _, dup := r.adapters[a.Name()]; !dup {
			r.names = append(r.names, a.Name())
		}
		r.adapters[a.Name()] = a
	}
	slices.Sort(r.names)
	return r
}

// Get returns the adapter of the given name.
func (r *Registry) Get(name string) (Adapter, bool) {
	a, ok := r.adapters[name]
	return a, ok
}

// Names returns the names of the registered adapters, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// HandOver gives the manifest to every registered adapter, in name order,
// and joins their errors. Deployments select a runtime per environment;
// until executions arrive every adapter learns of every manifest.
func (r *Registry) HandOver(ctx context.Context, manifest *resource.Object) error {
	var errs []error
	for _, n := range r.names {
		if err := r.adapters[n].HandOver(ctx, manifest); err != nil {
			errs = append(errs, fmt.Errorf("adapter %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// HandOverTo gives the manifest to the adapter of the given name.
func (r *Registry) HandOverTo(ctx context.Context, name string, manifest *resource.Object) error {
	a, ok := r.adapters[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownAdapter, name)
	}
	return a.HandOver(ctx, manifest)
}

// HandOverRecord is one manifest the Local adapter received.
type HandOverRecord struct {
	// Namespace and Manifest identify the manifest.
	Namespace, Manifest string
	// At is when it arrived.
	At time.Time
}

// Local is the runtime adapter of local mode. It records every hand-over
// in memory and logs it (manifest name only, never its spec).
type Local struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	records []HandOverRecord
}

// LocalName is the runtime id of the Local adapter.
const LocalName = resource.DefaultRuntime

// maxRecords bounds the hand-overs Local keeps; older ones are dropped.
const maxRecords = 1000

// NewLocal returns a Local adapter logging to log (nil discards) and
// stamping records with the wall clock.
func NewLocal(log *slog.Logger) *Local {
	return NewLocalWithClock(log, time.Now)
}

// NewLocalWithClock is NewLocal with an injected clock, for tests.
func NewLocalWithClock(log *slog.Logger, now func() time.Time) *Local {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Local{log: log, now: now}
}

// Name returns "local".
func (l *Local) Name() string { return LocalName }

// HandOver records and logs the manifest's arrival.
func (l *Local) HandOver(ctx context.Context, manifest *resource.Object) error {
	if manifest == nil || manifest.Kind != resource.KindCompiledAgentManifest {
		return fmt.Errorf("adapter local: expected a %s", resource.KindCompiledAgentManifest)
	}
	rec := HandOverRecord{Namespace: manifest.Metadata.Namespace, Manifest: manifest.Metadata.Name, At: l.now().UTC()}
	l.mu.Lock()
	if len(l.records) >= maxRecords {
		l.records = slices.Delete(l.records, 0, len(l.records)-maxRecords+1)
	}
	l.records = append(l.records, rec)
	l.mu.Unlock()
	l.log.InfoContext(ctx, "manifest handed over to local runtime",
		"namespace", rec.Namespace, "manifest", rec.Manifest, "resourceVersion", manifest.Metadata.ResourceVersion)
	return nil
}

// HandOvers returns the recorded hand-overs, oldest first.
func (l *Local) HandOvers() []HandOverRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}
