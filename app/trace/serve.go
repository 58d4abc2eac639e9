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

// Serve serves the listeners until ctx ends or a listener fails, then
// shuts them down and writes what is queued. Retention is the cluster's
// retention job's (server.RetainTenant).
func (s *Service) Serve(ctx context.Context, ls Listeners) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	if ls.Query != nil {
		app := s.App()
		go func() { errc <- wrapServe("trace query", app.Listener(ls.Query)) }()
		defer func() { _ = listener.ShutdownFiber(app, ls.Query) }()
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
