package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/gateway"
)

// MetaToolCall is the _meta key of a result that names its ToolCall record.
const MetaToolCall = "warden.dev/toolCall"

// callResult is a governed call's answer in MCP terms.
type callResult struct {
	// result is a CallToolResult as a generic object, when the call has
	// one to show (finished, failed with a tool error, or waiting).
	result map[string]any
	// status is the HTTP status of the result.
	status int
	// err is the refusal when there is no result.
	err      *apierr.Error
	call     string
	phase    string
	replayed bool
}

// call runs tools/call of an MCP server's tool through the tool gateway.
func (s *Service) call(ctx context.Context, p auth.Principal, server, tool string, args map[string]any, wait, idemKey string) callResult {
	return s.govern(ctx, p, gateway.CallRequest{MCP: &gateway.MCPTarget{Server: server, Tool: tool}, Input: args, Wait: wait, IdempotencyKey: idemKey})
}

// govern runs a call through the gateway's nine steps and shapes its
// outcome as a CallToolResult.
func (s *Service) govern(ctx context.Context, p auth.Principal, req gateway.CallRequest) callResult {
	if s.gw == nil {
		return callResult{err: apierr.New(apierr.CodeUnavailable, "the tool gateway is not running, and MCP calls are governed by it")}
	}
	ctx, b := withBlobs(ctx)
	out, err := s.gw.Call(ctx, p, req)
	cr := callResult{status: http.StatusOK}
	if out != nil && out.Call != nil {
		cr.call, cr.replayed, cr.phase = out.Call.Metadata.Name, out.Replayed, out.Phase()
	}
	if err != nil {
		e, ok := apierr.As(err)
		if !ok {
			s.log.ErrorContext(ctx, "governed MCP call failed", "err", err)
			e = apierr.New(apierr.CodeInternal, "internal error")
		}
		// A tool that answered with an error result: the client sees the
		// result (a model can read it and correct itself).
		if e.Code == apierr.CodeToolFailed && out != nil && out.Call != nil {
			if o, _ := out.Call.Status["output"].(map[string]any); o != nil {
				if r, _ := o["result"].(map[string]any); r != nil {
					if _, ok := r["content"]; ok {
						cr.result = shapeResult(r, b, cr.call)
						cr.result["isError"] = true
						return cr
					}
				}
			}
		}
		cr.err = e
		return cr
	}
	switch cr.phase {
	case gateway.PhaseSucceeded:
		o, _ := out.Call.Status["output"].(map[string]any)
		cr.result = shapeResult(o, b, cr.call)
	case gateway.PhaseAwaitingApproval:
		cr.status = http.StatusAccepted
		cr.result = pendingResult(cr.call, gateway.ApprovalName(cr.call), "awaits approval")
	default:
		cr.status = http.StatusAccepted
		cr.result = pendingResult(cr.call, "", "is "+cr.phase)
	}
	return cr
}

// shapeResult copies a recorded output as a CallToolResult: an MCP result
// as it is (with the data of images and audio put back when this request
// fetched them), any other output (REST and OS tools, a truncated result)
// as JSON text plus structuredContent.
func shapeResult(o map[string]any, b *blobs, call string) map[string]any {
	if _, ok := o["content"].([]any); ok && b.empty() {
		// Nothing to put back: a shallow copy with its own _meta leaves
		// the record as it is.
		out := make(map[string]any, len(o)+1)
		for k, v := range o {
			out[k] = v
		}
		meta := map[string]any{}
		if m, ok := o["_meta"].(map[string]any); ok {
			for k, v := range m {
				meta[k] = v
			}
		}
		meta[MetaToolCall] = call
		out["_meta"] = meta
		return out
	}
	var out map[string]any
	raw, err := json.Marshal(o)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil || out == nil {
		out = map[string]any{}
	}
	if _, ok := out["content"].([]any); ok {
		b.restore(out)
	} else {
		out = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(raw)}}, "structuredContent": out}
	}
	meta, _ := out["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[MetaToolCall] = call
	out["_meta"] = meta
	return out
}

// pendingResult says that a call has no result yet and what to do.
func pendingResult(call, approval, what string) map[string]any {
	text := fmt.Sprintf("Tool call %s %s and has no result yet. Call the tool again with the same arguments to receive its result once it finishes (the call is idempotent).", call, what)
	sc := map[string]any{"toolCall": call}
	if approval != "" {
		text = fmt.Sprintf("Tool call %s awaits human approval (Approval %s): an approver decides with `warden approvals decide --id %s`. Call the tool again with the same arguments to receive its result once approved (the call is idempotent, it will not run twice).", call, approval, approval)
		sc["approval"], sc["phase"] = approval, gateway.PhaseAwaitingApproval
	}
	return map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": text}},
		"structuredContent": sc,
		"isError":           true,
		"_meta":             map[string]any{MetaToolCall: call},
	}
}
