package trace

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// OTLP/JSON differs from the protobuf JSON mapping in one way that
// matters: trace and span ids are hex strings, not base64. The ids are
// rewritten between the two in the decoded JSON tree.

// idKeys are the JSON fields that hold ids.
var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true, "trace_id": true, "span_id": true, "parent_span_id": true}

// decodeOTLPJSON decodes an OTLP/JSON export request.
func decodeOTLPJSON(body []byte) (*collectortrace.ExportTraceServiceRequest, error) {
	var tree any
	if err := json.Unmarshal(body, &tree); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if err := rewriteIDs(tree, hexToBase64, 0); err != nil {
		return nil, err
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("re-encode: %w", err)
	}
	req := &collectortrace.ExportTraceServiceRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("the body is not an OTLP ExportTraceServiceRequest: %w", err)
	}
	return req, nil
}

// encodeOTLPJSON encodes TracesData (or any OTLP message holding spans) as
// OTLP/JSON.
func encodeOTLPJSON(m *tracepb.TracesData) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: false}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	if err := rewriteIDs(tree, base64ToHex, 0); err != nil {
		return nil, err
	}
	return json.Marshal(tree)
}

func hexToBase64(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("id %q is not hex", s)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func base64ToHex(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// maxJSONDepth bounds the recursion over a decoded body.
const maxJSONDepth = 64

// rewriteIDs applies fn to every id field in tree.
func rewriteIDs(tree any, fn func(string) (string, error), depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("the JSON is nested deeper than %d levels", maxJSONDepth)
	}
	switch v := tree.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && idKeys[k] {
				r, err := fn(s)
				if err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				v[k] = r
				continue
			}
			if err := rewriteIDs(x, fn, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := rewriteIDs(x, fn, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
