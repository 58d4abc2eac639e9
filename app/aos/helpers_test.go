package aos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

// govFunc is a Governor that hands every method to one function, with the
// typed params for the tool hooks and nil for the rest.
type govFunc func(ctx context.Context, req *aos.Request, params any) (aos.Decision, error)

func (f govFunc) ToolCallRequest(ctx context.Context, req *aos.Request, p *aos.ToolCallRequestParams) (aos.Decision, error) {
	return f(ctx, req, p)
}

func (f govFunc) ToolCallResult(ctx context.Context, req *aos.Request, p *aos.ToolCallResultParams) (aos.Decision, error) {
	return f(ctx, req, p)
}

func (f govFunc) Step(ctx context.Context, req *aos.Request) (aos.Decision, error) {
	return f(ctx, req, nil)
}

// allowAll allows every step.
var allowAll = govFunc(func(_ context.Context, req *aos.Request, _ any) (aos.Decision, error) {
	return aos.Decision{Decision: aos.Allow, Message: "allowed " + req.Method}, nil
})

// example returns the bytes of a file in testdata/examples.
func example(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "examples", name))
	require.NoError(t, err)
	return b
}

// exampleNames lists testdata/examples.
func exampleNames(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "examples"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Len(t, names, 18, "the spec ships 17 JSON examples and raw-trailing-comma.txt")
	return names
}

// repaired returns an example request with the two deviations from the
// schema that the AOS authors' examples share mended: context.agent gets
// the url the schema requires, and a protocols/MCP request gets its MCP
// message under params.message instead of as params itself. Nothing else
// changes, so a repaired example shows that these are the only problems.
func repaired(t testing.TB, raw []byte) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	params, _ := m["params"].(map[string]any)
	if ctx, ok := params["context"].(map[string]any); ok {
		if agent, ok := ctx["agent"].(map[string]any); ok {
			if _, ok := agent["url"]; !ok {
				agent["url"] = "https://agents.example/personal-assistant"
			}
		}
	}
	if m["method"] == "protocols/MCP" {
		if _, ok := params["message"]; !ok {
			m["params"] = map[string]any{"message": params}
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// serve runs a body through aos.Serve and checks what every answer must
// be: status 200, one JSON object, valid against the schema. It returns
// the decoded response.
func serve(t testing.TB, gov aos.Governor, body []byte) map[string]any {
	t.Helper()
	status, resp := aos.Serve(context.Background(), gov, body)
	return checkResponse(t, status, resp)
}

func checkResponse(t testing.TB, status int, resp []byte) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, aos.ValidateResponse(resp), "response %s", resp)
	m := decodeObject(t, resp)
	require.Equal(t, "2.0", m["jsonrpc"])
	return m
}

// decodeObject decodes a JSON object with json.Number numbers, as the
// package does.
func decodeObject(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	require.NoError(t, d.Decode(&m))
	return m
}

// errorCode returns the error code of a response, or 0 for a result.
func errorCode(t testing.TB, resp map[string]any) int {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		return 0
	}
	n, err := e["code"].(json.Number).Int64()
	require.NoError(t, err)
	return int(n)
}

// toolCallRequestBody is a valid steps/toolCallRequest: example 02 with
// the agent url the schema requires.
func toolCallRequestBody(t testing.TB) []byte {
	t.Helper()
	return repaired(t, example(t, "02-steps_toolCallRequest.json"))
}
