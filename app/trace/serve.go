package trace

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/warden-dev/warden/app/listener"
)

// expireBatch is how many rows of each trace table one retention
// transaction deletes at most, so that ingest waits for one short
// transaction at most.
const expireBatch = 1000

// retention returns how long tenant keeps spans.
func (s *Service) retention(tenant string) time.Duration {
	if d, ok := s.cfg.TenantRetention[tenant]; ok {
		return d
	}
	return s.cfg.Retention
}

// Expire deletes, for every tenant, the spans, rollups and OCSF events
// older than the tenant's retention, expireBatch rows a transaction.
// Replicas sharing a store may all run it: a row is deleted once, and a
// batch deletes only rows nobody may read any more.
func (s *Service) Expire(ctx context.Context) error {
	tenants, err := s.st.TenantList(ctx)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	var errs []error
	for _, t := range tenants {
		before := s.now().Add(-s.retention(t.ID))
		for {
			n, err := s.st.SpanExpire(ctx, t.ID, before, expireBatch)
			if err != nil {
				errs = append(errs, fmt.Errorf("tenant %s: %w", t.ID, err))
				break
			}
			if n < expireBatch {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Listeners are the trace service's listeners; a nil one is not served.
type Listeners struct {
	// Query serves the query API and /metrics (8086).
	Query net.Listener
	// OTLPHTTP serves OTLP/HTTP and OCSF ingest (4318).
	OTLPHTTP net.Listener
	// OTLPGRPC serves OTLP/gRPC (4317).
	OTLPGRPC net.Listener
	// GRPCOptions configure the gRPC server, such as its TLS credentials.
	GRPCOptions []grpc.ServerOption
}

// Serve serves the listeners and runs retention until ctx ends or a
// listener fails, then shuts them down and writes what is queued.
func (s *Service) Serve(ctx context.Context, ls Listeners) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	if ls.Query != nil {
		app := s.App()
		go func() { errc <- wrapServe("trace query", app.Listener(ls.Query)) }()
		defer func() {
			sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
			defer c()
			_ = app.ShutdownWithContext(sctx)
		}()
	}
	if ls.OTLPHTTP != nil {
		t := listener.Timeouts{}.WithDefaults()
		hs := &http.Server{Handler: s.IngestHandler(), ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
			IdleTimeout: t.Idle, MaxHeaderBytes: 64 << 10}
		go func() {
			err := hs.Serve(ls.OTLPHTTP)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- wrapServe("OTLP/HTTP", err)
		}()
		defer func() {
			sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
			defer c()
			_ = hs.Shutdown(sctx)
		}()
	}
	if ls.OTLPGRPC != nil {
		gs := s.GRPCServer(ls.GRPCOptions...)
		go func() { errc <- wrapServe("OTLP/gRPC", gs.Serve(ls.OTLPGRPC)) }()
		defer gs.GracefulStop()
	}
	go s.retain(ctx)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	return err
}

func wrapServe(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// retain runs Expire every RetentionEvery until ctx ends.
func (s *Service) retain(ctx context.Context) {
	t := time.NewTicker(s.cfg.RetentionEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Expire(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("expire spans", "err", err)
			}
		}
	}
}
