package trace

import (
	"context"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP senders may compress with gzip
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/listener"
)

// GRPCServer returns the OTLP/gRPC server (TraceService/Export) of the
// gRPC port, 4317. Messages larger than MaxRequestBytes (after
// decompression) are refused by gRPC itself with RESOURCE_EXHAUSTED.
func (s *Service) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes),
		grpc.ChainUnaryInterceptor(listener.RecoverUnary(s.log)),
		grpc.ChainStreamInterceptor(listener.RecoverStream(s.log)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute}),
		grpc.ConnectionTimeout(10 * time.Second),
	}, opts...)
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, &grpcTraces{s: s})
	return srv
}

type grpcTraces struct {
	collectortrace.UnimplementedTraceServiceServer
	s *Service
}

// Export stores the spans of one OTLP/gRPC request.
func (g *grpcTraces) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	p, err := g.s.cfg.Ingest.Authenticate(ctx, first("authorization"))
	if err != nil {
		g.s.metrics.request("grpc", apierr.CodeUnauthenticated, 0, 0, "")
		return nil, grpcError(authError(err))
	}
	res, err := g.s.export(ctx, "grpc", p, first("x-warden-namespace"), req)
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &collectortrace.ExportTraceServiceResponse{}
	if res.rejected > 0 {
		resp.PartialSuccess = &collectortrace.ExportTracePartialSuccess{RejectedSpans: res.rejected, ErrorMessage: res.message}
	}
	return resp, nil
}

// grpcError converts an error into a gRPC status, with RetryInfo when the
// sender should retry later.
func grpcError(err error) error {
	e, ok := apierr.As(err)
	if !ok {
		return grpcstatus.Error(codes.Internal, "internal error")
	}
	return grpcstatus.ErrorProto(statusOf(e))
}
