package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
)

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	// rpcWardenError carries a Warden error (data.code) such as
	// PolicyDenied or Quarantined.
	rpcWardenError = -32000
)

// ToolCall is a parsed JSON-RPC tools/call request.
type ToolCall struct {
	// ID is the request id, a JSON string or number, echoed in the answer.
	ID json.RawMessage
	// Name is params.name: the tool's name on the server, or
	// "<server>.<tool>" for POST /v1/mcp/call.
	Name string
	// Server is params.server, a Warden extension that names the server of
	// POST /v1/mcp/call when the name does not.
	Server string
	// Arguments is params.arguments; never nil.
	Arguments map[string]any
	// ProgressToken is params._meta.progressToken, if any.
	ProgressToken any
	// Meta is params._meta, if any.
	Meta map[string]any
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// ParseToolCall parses the body of POST /v1/mcp/…/call: one JSON-RPC 2.0
// request (not a batch, not a notification) of method tools/call whose
// params are {name, arguments?, _meta?, server?}. Unknown members of the
// request are refused; arguments must be an object.
func ParseToolCall(body []byte) (*ToolCall, *RPCError) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: `the body is empty: send {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"…","arguments":{…}}}`}
	}
	if body[0] == '[' {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: "batches are not accepted: send one tools/call request"}
	}
	var req struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		return nil, &RPCError{Code: rpcParseError, Message: "the body is not a JSON-RPC request: " + err.Error()}
	}
	if d.More() {
		return nil, &RPCError{Code: rpcParseError, Message: "the body has data after the JSON-RPC request"}
	}
	if req.JSONRPC == nil || *req.JSONRPC != "2.0" {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: `jsonrpc must be "2.0"`}
	}
	id := bytes.TrimSpace(req.ID)
	if len(id) == 0 || id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: "id must be a string or a number: notifications get no answer"}
	}
	if req.Method == nil {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: "method is required"}
	}
	tc := &ToolCall{ID: id}
	if *req.Method != "tools/call" {
		return tc, &RPCError{Code: rpcMethodNotFound, Message: fmt.Sprintf("method %q is not served here: this endpoint takes tools/call (the per-agent endpoint /mcp speaks the whole protocol)", *req.Method)}
	}
	var params struct {
		Name      *string         `json:"name"`
		Server    string          `json:"server"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
	}
	if len(req.Params) == 0 || bytes.Equal(bytes.TrimSpace(req.Params), []byte("null")) {
		return tc, &RPCError{Code: rpcInvalidParams, Message: "params are required: {\"name\": \"…\", \"arguments\": {…}}"}
	}
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return tc, &RPCError{Code: rpcInvalidParams, Message: "params must be an object {name, arguments}: " + err.Error()}
	}
	if params.Name == nil || strings.TrimSpace(*params.Name) == "" {
		return tc, &RPCError{Code: rpcInvalidParams, Message: "params.name is required"}
	}
	tc.Name, tc.Server = *params.Name, params.Server
	tc.Arguments = map[string]any{}
	if a := bytes.TrimSpace(params.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' {
			return tc, &RPCError{Code: rpcInvalidParams, Message: "params.arguments must be an object"}
		}
		if err := json.Unmarshal(a, &tc.Arguments); err != nil {
			return tc, &RPCError{Code: rpcInvalidParams, Message: "params.arguments: " + err.Error()}
		}
	}
	if params.Meta != nil {
		tc.Meta, tc.ProgressToken = params.Meta, params.Meta["progressToken"]
	}
	return tc, nil
}

// SplitToolName splits "<server>.<tool>" at the first dot: server names
// are DNS-1123 labels, which have none.
func SplitToolName(name string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(name, ".")
	return server, tool, ok && server != "" && tool != ""
}

// wardenRPCError wraps a Warden error as a JSON-RPC error.
func wardenRPCError(e *apierr.Error) *RPCError {
	data := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 {
		data["details"] = e.Details
	}
	return &RPCError{Code: rpcWardenError, Message: e.Code + ": " + e.Message, Data: data}
}
