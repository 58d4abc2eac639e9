package aos

import (
	"net/url"
	"strings"
)

// AgentURLPrefix starts the context.agent.url Warden writes into a request
// that named none: "urn:aos:agent:" and the agent's id, escaped. The
// schema requires the member although none of the AOS authors' examples
// sends it, and Warden does not depend on it (the agent's identity comes
// from its credential), so a request without it is accepted and mended;
// what Warden sends back (a modifiedRequest) then carries this URL and
// stays valid against the schema.
const AgentURLPrefix = "urn:aos:agent:"

// mend rewrites, in place, the deviations from the schema that Warden
// tolerates in a request it receives, so that the request validates and
// everything derived from it is valid too:
//
//   - a context.agent (in params.context) without url gets
//     AgentURLPrefix + its id;
//   - a protocols/MCP request whose params are the MCP message itself (a
//     JSON-RPC object with jsonrpc and method, as the AOS examples send
//     it) gets it moved under params.message, the shape the schema
//     defines.
//
// Anything else is left for the schema to judge. It reports what it
// mended, for logs and tests.
func mend(m map[string]any) []string {
	var done []string
	params, _ := m["params"].(map[string]any)
	if params == nil {
		return nil
	}
	if ctx, ok := params["context"].(map[string]any); ok {
		if agent, ok := ctx["agent"].(map[string]any); ok {
			if _, has := agent["url"]; !has {
				if id, ok := agent["id"].(string); ok && id != "" {
					agent["url"] = AgentURLPrefix + url.PathEscape(strings.TrimSpace(id))
					done = append(done, "params.context.agent.url")
				}
			}
		}
	}
	if m["method"] == MethodMCP {
		if _, has := params["message"]; !has {
			if _, rpc := params["jsonrpc"].(string); rpc {
				if _, method := params["method"].(string); method {
					m["params"] = map[string]any{"message": params}
					done = append(done, "params.message")
				}
			}
		}
	}
	return done
}
