package trace

import (
	"context"
	"fmt"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP senders may compress with gzip
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/listener"
)

// GRPCServer returns the OTLP/gRPC server (TraceService/Export) of the
// gRPC port, 4317. Messages larger than MaxRequestBytes (after
// decompression) are refused by gRPC itself with RESOURCE_EXHAUSTED.
//
// The server takes an export's protobuf as received (rawCodec) and
// decodes it straight into rows (convertProto), as OTLP/HTTP does.
func (s *Service) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes),
		grpc.ForceServerCodecV2(rawCodec{proto: encoding.GetCodecV2("proto")}),
		grpc.ChainUnaryInterceptor(listener.RecoverUnary(s.log)),
		grpc.ChainStreamInterceptor(listener.RecoverStream(s.log)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute}),
		grpc.ConnectionTimeout(10 * time.Second),
	}, opts...)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&traceServiceDesc, &grpcTraces{s: s})
	return srv
}

// rawRequest is the protobuf of an export request, undecoded.
type rawRequest struct{ b []byte }

// rawCodec hands a rawRequest its bytes as received and is the proto
// codec for every other message (the answers).
type rawCodec struct{ proto encoding.CodecV2 }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawRequest); ok {
		r.b = data.Materialize()
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// traceServiceDesc is collectortrace's TraceService whose Export takes a
// rawRequest.
var traceServiceDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Export",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := &rawRequest{}
			if err := dec(in); err != nil {
				return nil, err
			}
			g := srv.(rawExporter)
			if interceptor == nil {
				return g.Export(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: collectortrace.TraceService_Export_FullMethodName}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return g.Export(ctx, req.(*rawRequest))
			})
		},
	}},
	Streams:  []grpc.StreamDesc{},
	Metadata: "opentelemetry/proto/collector/trace/v1/trace_service.proto",
}

// rawExporter serves traceServiceDesc.
type rawExporter interface {
	Export(ctx context.Context, req *rawRequest) (*collectortrace.ExportTraceServiceResponse, error)
}

type grpcTraces struct {
	s *Service
}

// Export stores the spans of one OTLP/gRPC request.
func (g *grpcTraces) Export(ctx context.Context, req *rawRequest) (*collectortrace.ExportTraceServiceResponse, error) {
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
	res, err := g.s.export(ctx, "grpc", p, first("x-warden-namespace"), func(src Source) (*converted, error) {
		c, err := convertProto(req.b, src, g.s.cfg.Limits)
		if err != nil {
			return nil, fmt.Errorf("the message is not an OTLP ExportTraceServiceRequest in protobuf: %w", err)
		}
		return c, nil
	})
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
