package listener

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcRequestID is the metadata key of the request id on gRPC listeners:
// X-Request-Id, lower-cased as gRPC metadata is.
const grpcRequestID = "x-request-id"

// RecoverUnary is the gRPC counterpart of Recover for unary calls: every
// call gets a request id (the caller's x-request-id metadata when usable),
// sent back in the response header and carried in the context
// (RequestIDFromContext); a panic in the handler is logged with its stack
// and the id and answered codes.Internal naming the id. The server keeps
// serving.
func RecoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		ctx, id := grpcRequest(ctx)
		defer func() {
			if v := recover(); v != nil {
				resp, err = nil, grpcPanic(ctx, log, v, info.FullMethod, id)
			}
		}()
		return handler(ctx, req)
	}
}

// RecoverStream is RecoverUnary for streaming calls.
func RecoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx, id := grpcRequest(ss.Context())
		defer func() {
			if v := recover(); v != nil {
				err = grpcPanic(ctx, log, v, info.FullMethod, id)
			}
		}()
		return handler(srv, &idStream{ServerStream: ss, ctx: ctx})
	}
}

// grpcRequest gives a call its request id and announces it in the
// response header.
func grpcRequest(ctx context.Context) (context.Context, string) {
	var id string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(grpcRequestID); len(v) > 0 && v[0] != "" && len(v[0]) <= 64 {
			id = v[0]
		}
	}
	if id == "" {
		id = NewRequestID()
	}
	// Outside a real call (a handler invoked directly) there is no stream
	// to set the header on; the id still goes to the log and the status.
	_ = grpc.SetHeader(ctx, metadata.Pairs(grpcRequestID, id))
	return context.WithValue(ctx, requestIDKey{}, id), id
}

// grpcPanic logs a recovered panic and returns the client's status.
func grpcPanic(ctx context.Context, log *slog.Logger, v any, method, id string) error {
	log.ErrorContext(ctx, "panic in handler", "panic", fmt.Sprint(v), "method", method,
		"requestId", id, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "internal error (request id %s)", id)
}

// idStream is a server stream whose context carries the request id.
type idStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *idStream) Context() context.Context { return s.ctx }
