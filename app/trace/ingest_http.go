package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/listener"
)

// Content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// IngestHandler serves OTLP/HTTP (POST /v1/traces) and the OCSF ingest
// (POST /v1/ocsf): the handler of the OTLP/HTTP port, 4318.
func (s *Service) IngestHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.handleOTLPHTTP)
	mux.HandleFunc("POST /v1/ocsf", s.handleOCSF)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHTTPError(w, contentJSON, apierr.New(apierr.CodeNotFound, "no endpoint %s %s here: OTLP/HTTP is POST /v1/traces, OCSF is POST /v1/ocsf", r.Method, r.URL.Path))
	})
	return listener.RecoverHTTP(mux, s.log)
}

// readBody reads a request body of at most max bytes, decompressed.
func readBody(r *http.Request, max int) ([]byte, error) {
	if r.ContentLength > int64(max) {
		return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, max)
	}
	var src io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(io.LimitReader(r.Body, int64(max)+1))
		if err != nil {
			return nil, apierr.New(apierr.CodeInvalidRequest, "the body is not valid gzip: %s", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, apierr.New(apierr.CodeInvalidRequest, "Content-Encoding %q is not supported: use gzip or none", r.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(src, int64(max)+1))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", max)
		}
		return nil, apierr.New(apierr.CodeInvalidRequest, "read the body: %s", err)
	}
	if len(b) > max {
		return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes (after decompression)", max)
	}
	return b, nil
}

// mediaType returns the request's content type without parameters.
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

func (s *Service) handleOTLPHTTP(w http.ResponseWriter, r *http.Request) {
	ct := mediaType(r)
	if ct != contentProtobuf && ct != contentJSON {
		s.metrics.request("http", apierr.CodeInvalidRequest, 0, 0, "")
		writeHTTPError(w, contentJSON, apierr.New(apierr.CodeInvalidRequest, "Content-Type %q is not OTLP: use %s or %s", r.Header.Get("Content-Type"), contentProtobuf, contentJSON))
		return
	}
	p, err := s.cfg.Ingest.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		s.metrics.request("http", apierr.CodeUnauthenticated, 0, 0, "")
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden-trace"`)
		writeHTTPError(w, ct, authError(err))
		return
	}
	// Bound the bytes read off the connection too, so a body without a
	// length cannot make the server read past the limit.
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes)+1)
	body, err := readBody(r, s.cfg.MaxRequestBytes)
	if err != nil {
		s.metrics.request("http", codeOf(err), 0, 0, "")
		writeHTTPError(w, ct, err)
		return
	}
	decode := func(src Source) (*converted, error) {
		if ct == contentJSON {
			req, err := decodeOTLPJSON(body)
			if err != nil {
				return nil, err
			}
			return convert(req, src, s.cfg.Limits), nil
		}
		c, err := convertProto(body, src, s.cfg.Limits)
		if err != nil {
			return nil, fmt.Errorf("the body is not an OTLP ExportTraceServiceRequest in protobuf: %w", err)
		}
		return c, nil
	}
	res, err := s.export(r.Context(), "http", p, r.Header.Get(NamespaceHeader), decode)
	if err != nil {
		if e, ok := apierr.As(err); ok && e.Code == apierr.CodeRateLimited {
			w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Round(time.Second).Seconds())))
		}
		writeHTTPError(w, ct, err)
		return
	}
	resp := &collectortrace.ExportTraceServiceResponse{}
	if res.rejected > 0 {
		resp.PartialSuccess = &collectortrace.ExportTracePartialSuccess{RejectedSpans: res.rejected, ErrorMessage: res.message}
	}
	var out []byte
	if ct == contentJSON {
		out, err = protojson.Marshal(resp)
	} else {
		out, err = proto.Marshal(resp)
	}
	if err != nil {
		writeHTTPError(w, ct, fmt.Errorf("encode the response: %w", err))
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// grpcCode maps an error code of DESIGN.md onto the gRPC code OTLP
// senders read.
func grpcCode(code string) codes.Code {
	switch code {
	case apierr.CodeInvalidRequest:
		return codes.InvalidArgument
	case apierr.CodeUnauthenticated:
		return codes.Unauthenticated
	case apierr.CodeForbidden:
		return codes.PermissionDenied
	case apierr.CodePayloadTooLarge:
		return codes.ResourceExhausted
	case apierr.CodeRateLimited:
		return codes.ResourceExhausted
	case apierr.CodeUnavailable:
		return codes.Unavailable
	case apierr.CodeTimeout:
		return codes.DeadlineExceeded
	case apierr.CodeNotFound:
		return codes.NotFound
	}
	return codes.Internal
}

// statusOf is the google.rpc.Status of an error, with RetryInfo when the
// sender should come back.
func statusOf(e *apierr.Error) *status.Status {
	st := &status.Status{Code: int32(grpcCode(e.Code)), Message: e.Code + ": " + e.Message}
	if secs, ok := e.Details["retryAfterSeconds"].(int); ok {
		if d, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)}); err == nil {
			st.Details = append(st.Details, d)
		}
	}
	return st
}

// writeHTTPError answers err: a google.rpc.Status for protobuf senders (as
// OTLP/HTTP specifies), the documented error body for JSON ones.
func writeHTTPError(w http.ResponseWriter, ct string, err error) {
	e, ok := apierr.As(err)
	if !ok {
		e = apierr.New(apierr.CodeInternal, "internal error")
	}
	if ct == contentProtobuf {
		b, _ := proto.Marshal(statusOf(e))
		w.Header().Set("Content-Type", contentProtobuf)
		w.WriteHeader(e.Status())
		_, _ = w.Write(b)
		return
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(apierr.Body{Error: e})
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(e.Status())
	_, _ = w.Write(buf.Bytes())
}
