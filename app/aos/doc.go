// Package aos speaks AOS 0.1.0, the Agent Observability Standard's
// JSON-RPC 2.0 hook contract, in both directions and without a transport:
//
//   - inbound, the gateway's POST /v1/hooks/aos route hands each body to
//     Handler.Serve (or Serve), which validates it, asks a Governor (the
//     gateway: it records steps/toolCallRequest and steps/toolCallResult
//     as ToolCalls and evaluates policy) and returns the response to
//     write;
//   - outbound, Guardian.Call asks an external Guardian Agent to decide a
//     request, and turns every failure into a fail-open or fail-closed
//     decision plus an error to record.
//
// # Schema
//
// The AOS JSON Schema (draft-07) is embedded as aos_schema.json and
// compiled once per process (DefaultSchema). Each branch of its
// ASOPRequest union pins a method with a const, so the methods are read
// from the schema rather than listed here, and a request is validated
// against the one branch its method names: the same verdict as the whole
// union at a fraction of the cost, with errors about that branch only.
// Formats are asserted, as draft-07 allows, so timestamps must be RFC 3339.
//
// A request that differs from the schema only in ways Warden does not
// depend on is mended before it is validated (lenient.go), so the AOS
// authors' own examples are decided: a context.agent without the url the
// schema requires gets AgentURLPrefix and its id (the agent's identity
// comes from its credential anyway), and a protocols/MCP request that
// carries the MCP message directly in params gets it under params.message.
// Nothing else is tolerated, and everything Warden sends (responses,
// modifiedRequests, Guardian calls) is valid against the schema.
//
// # Mapping onto JSON-RPC
//
//   - Errors use the schema's codes and messages: -32700 "Invalid JSON
//     payload" (not JSON or not UTF-8), -32600 "Request payload validation
//     error" (not a single request object, jsonrpc not "2.0", no string
//     method, no string or integer id, larger than MaxMessageBytes, or a
//     schema violation outside params), -32601 "Method not found" (data
//     lists the known methods), -32602 "Invalid parameters" (data lists
//     each violation with its JSON Pointer), -32603 "Internal error"
//     (whatever failed on our side; the details go to the log only).
//     -32000 to -32099 are left to AOS.
//   - Batches (a JSON array) are answered with one -32600 error: the
//     schema defines single request objects only, and a hook call is a
//     synchronous question about one step.
//   - Notifications (no id) are answered with -32600 rather than ignored:
//     every request definition of the schema requires an id, and a step
//     reported without expecting a decision would go ungoverned.
//   - An error response whose request id could not be read (a parse error,
//     for one) carries the id null (NoID), as JSON-RPC 2.0 requires; the
//     schema's responses ask for a string or an integer there, so that
//     one member follows JSON-RPC and the rest is checked by the schema.
//   - Every response Serve returns is validated against the schema before
//     it leaves; one that fails (a governor's unencodable data or invalid
//     modifiedRequest) is replaced by -32603.
//   - The HTTP status is always 200. JSON-RPC errors are answers carried in
//     the body; a 4xx or 5xx would tell HTTP clients and proxies that the
//     transport failed. The route keeps non-200 statuses for transport
//     failures of its own (authentication, wrong HTTP method, oversized
//     body), and Serve never produces a 5xx, whatever the input.
//
// # Decisions
//
// steps/toolCallRequest and steps/toolCallResult go to the Governor with
// typed params; every other method the schema defines goes to
// Governor.Step, except ping, which Serve answers itself with the schema's
// PingRequestSuccessResponse (status "connected"): it asks for liveness,
// not for a decision. A Decision is allow, deny or modify; modify must
// carry a ModifiedRequest of the same method and allow and deny none.
//
// Typed params are read from the validated value by exact member names,
// and Request.Params is re-encoded from it, so what the gateway evaluates,
// records and forwards is exactly what the schema checked: no duplicate
// member and no case-insensitive match can make the checked request and
// the evaluated one differ.
//
// # Tool inputs and results
//
// AOS carries tool inputs as [{name, value}] and results as text parts;
// the gateway works with an input object and a result value. InputMap and
// Inputs convert inputs; Outputs writes a result as one text part holding
// its JSON, and OutputValue reads parts back, parsing text that is JSON.
package aos
