package agbom

import (
	"context"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/events"
)

// Queue schedules the regeneration of a manifest's BOM as a durable job
// (jobs.AgBOMs, a River job on the store's database).
type Queue interface {
	// EnqueueAgBOM schedules the refresh of a manifest's BOM after the
	// compile that wrote the manifest at resourceVersion at compiledAt.
	EnqueueAgBOM(ctx context.Context, tenant, namespace, manifest, resourceVersion, compiledAt string) error
}

// enqueueTimeout bounds the insert of one job (or one in-process
// refresh): a stuck database must not pile up goroutines.
const enqueueTimeout = 30 * time.Second

// Watch subscribes to bus and, for every AgentCompiled, schedules the
// regeneration of that manifest's BOM: as a job on q, or, with a nil q,
// in a goroutine of this process. The bus handler itself never blocks the
// apply that published the event. The returned function unsubscribes and
// waits for the work already started.
//
// A job lost between commit and insert (the process died) leaves the
// manifest without a current stored BOM; Get then answers a BOM built on
// the fly and the next refresh stores one.
func (s *Service) Watch(bus *events.Bus, q Queue) (stop func()) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		closed bool
	)
	base, cancel := context.WithCancel(context.Background())
	unsubscribe := bus.Subscribe(func(ev events.Event) {
		if ev.Type != events.AgentCompiled {
			return
		}
		manifest, _ := ev.Data["manifest"].(string)
		if manifest == "" {
			return
		}
		rv, _ := ev.Data["resourceVersion"].(string)
		compiledAt := ev.Time.UTC().Format(time.RFC3339)
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, done := context.WithTimeout(base, enqueueTimeout)
			defer done()
			var err error
			if q != nil {
				err = q.EnqueueAgBOM(ctx, ev.Tenant, ev.Namespace, manifest, rv, compiledAt)
			} else {
				err = s.RefreshManifest(ctx, ev.Tenant, ev.Namespace, manifest, compiledAt)
			}
			if err != nil {
				s.cfg.Logger.Error("schedule AgBOM refresh", "tenant", ev.Tenant, "namespace", ev.Namespace, "manifest", manifest, "err", err)
			}
		}()
	})
	return func() {
		unsubscribe()
		mu.Lock()
		closed = true
		mu.Unlock()
		wg.Wait()
		cancel()
	}
}
