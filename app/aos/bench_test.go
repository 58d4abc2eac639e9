package aos_test

import (
	"context"
	"testing"

	"github.com/warden-dev/warden/app/aos"
)

// BenchmarkDecodeToolCallRequest measures what the gateway adds to every
// function tool call before policy: parse, validate against the
// ToolCallRequestStep definition, re-encode params.
func BenchmarkDecodeToolCallRequest(b *testing.B) {
	body := toolCallRequestBody(b)
	if _, e := aos.Decode(body); e != nil {
		b.Fatal(e)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := aos.Decode(body); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkServeToolCallRequest is the whole hook round trip with a
// governor that allows at once: decode, typed params, decision, encode
// and validate the response.
func BenchmarkServeToolCallRequest(b *testing.B) {
	body := toolCallRequestBody(b)
	h, err := aos.NewHandler(allowAll, aos.HandlerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		h.Serve(ctx, body)
	}
}

// BenchmarkValidateRequest is ValidateRequest on the same request as JSON
// text: parse and validate, without Decode's re-encoding of params.
// BenchmarkValidate (schema_internal_test.go) splits the cost further and
// compares the whole ASOPRequest union with the one branch.
func BenchmarkValidateRequest(b *testing.B) {
	body := toolCallRequestBody(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := aos.ValidateRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
