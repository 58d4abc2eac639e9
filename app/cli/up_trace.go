package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/trace"
	"github.com/warden-dev/warden/app/workload"
)

// Default ports of the trace service (docs/operations.md lists all).
const (
	defaultTracePort    = 8086
	defaultOTLPHTTPPort = 4318
	defaultOTLPGRPCPort = 4317
)

// traceOptions are up's trace service flags.
type traceOptions struct {
	queryPort, httpPort, grpcPort int
	retention                     time.Duration
	tenantRetention               []string
}

func (o *traceOptions) addFlags(f *pflag.FlagSet) {
	f.IntVar(&o.queryPort, "trace-port", defaultTracePort, "port of the trace query API and /metrics (0: not served)")
	f.IntVar(&o.httpPort, "otlp-http-port", defaultOTLPHTTPPort, "port of OTLP/HTTP and OCSF ingest (0: not served)")
	f.IntVar(&o.grpcPort, "otlp-grpc-port", defaultOTLPGRPCPort, "port of OTLP/gRPC ingest (0: not served)")
	f.DurationVar(&o.retention, "trace-retention", 7*24*time.Hour, "how long spans, call metrics and OCSF events are kept")
	f.StringSliceVar(&o.tenantRetention, "trace-retention-tenant", nil, "a tenant's own retention, TENANT=DURATION (repeatable)")
}

// check validates the flags against the control plane's port.
func (o traceOptions) check(ports ...int) error {
	seen := map[int]string{}
	for i, p := range ports {
		seen[p] = fmt.Sprint("port ", i)
	}
	for _, x := range []struct {
		name string
		port int
	}{{"--trace-port", o.queryPort}, {"--otlp-http-port", o.httpPort}, {"--otlp-grpc-port", o.grpcPort}} {
		if x.port < 0 || x.port > 65535 {
			return usagef("%s %d is not a TCP port (1-65535, 0 to disable it)", x.name, x.port)
		}
		if x.port == 0 {
			continue
		}
		if _, dup := seen[x.port]; dup {
			return usagef("%s %d is already used by another listener", x.name, x.port)
		}
		seen[x.port] = x.name
	}
	if o.retention <= 0 {
		return usagef("--trace-retention %s must be positive", o.retention)
	}
	_, err := o.overrides()
	return err
}

// overrides parses --trace-retention-tenant.
func (o traceOptions) overrides() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, kv := range o.tenantRetention {
		t, d, ok := strings.Cut(kv, "=")
		dur, err := time.ParseDuration(d)
		if !ok || t == "" || err != nil || dur <= 0 {
			return nil, usagef("--trace-retention-tenant %q is not TENANT=DURATION (such as acme=720h)", kv)
		}
		out[t] = dur
	}
	return out, nil
}

// startTrace builds the trace service over st, sends Warden's own spans
// (tp) into it, and serves its listeners on host until ctx ends. It
// returns the lines of up's summary; stop flushes the spans still queued
// and waits for the service to end.
func startTrace(ctx context.Context, st store.Store, srv *server.Server, tp *sdktrace.TracerProvider, o traceOptions, host string,
	tlsOpts tlsOptions, logger *slog.Logger) (stop func(), summary []string, err error) {
	var ls trace.Listeners
	overrides, err := o.overrides()
	if err != nil {
		return nil, nil, err
	}
	writers := 1
	if _, ok := st.(*postgres.Store); ok {
		writers = 4
	}
	svc, err := trace.New(trace.Config{
		Store: st, Logger: logger,
		Ingest: srv.Authenticator(workload.AudienceTrace), Query: srv.Authenticator(workload.AudienceControlPlane), Authz: srv.Authorizer(),
		Writers: writers, Retention: o.retention, TenantRetention: overrides,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("trace service: %w", err)
	}
	tlsCfg, err := tlsOpts.config()
	if err != nil {
		svc.Close()
		return nil, nil, err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		ls.GRPCOptions = append(ls.GRPCOptions, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	tp.RegisterSpanProcessor(sdktrace.NewBatchSpanProcessor(svc.Exporter()))
	var opened []net.Listener
	listen := func(port int, name string, wrapTLS bool) (net.Listener, error) {
		if port == 0 {
			return nil, nil
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if err := server.CheckTransport(addr, tlsCfg != nil, tlsOpts.allowPlaintext); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		opened = append(opened, ln)
		if wrapTLS && tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		return ln, nil
	}
	closeAll := func() {
		for _, ln := range opened {
			_ = ln.Close()
		}
		svc.Close()
	}
	if ls.Query, err = listen(o.queryPort, "trace query", true); err == nil {
		if ls.OTLPHTTP, err = listen(o.httpPort, "OTLP/HTTP", true); err == nil {
			// gRPC does its own TLS (GRPCOptions).
			ls.OTLPGRPC, err = listen(o.grpcPort, "OTLP/gRPC", false)
		}
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	client := clientHost(host)
	if o.queryPort != 0 {
		summary = append(summary, fmt.Sprintf("trace query + /metrics   %s://%s", scheme, net.JoinHostPort(client, strconv.Itoa(o.queryPort))))
	}
	if o.httpPort != 0 {
		summary = append(summary, fmt.Sprintf("OTLP/HTTP + OCSF ingest  %s://%s/v1/traces", scheme, net.JoinHostPort(client, strconv.Itoa(o.httpPort))))
	}
	if o.grpcPort != 0 {
		summary = append(summary, fmt.Sprintf("OTLP/gRPC ingest         %s", net.JoinHostPort(client, strconv.Itoa(o.grpcPort))))
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := svc.Serve(sctx, ls); err != nil {
			logger.Error("trace service", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		// Flush Warden's own spans into the queue, then write the queue.
		fctx, fcancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
		defer fcancel()
		if err := tp.ForceFlush(fctx); err != nil {
			logger.Warn("flush own spans", "err", err)
		}
		svc.Close()
	}, summary, nil
}
