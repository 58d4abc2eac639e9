package compile

import (
	"fmt"
	"net/url"
	"strings"
)

// Options are the service addresses written into manifests.
type Options struct {
	// ToolGatewayURL is the tool gateway's base URL, used for tools that
	// name no gatewayUrl of their own.
	ToolGatewayURL string
	// MCPGatewayURL is the MCP gateway's base URL; a server's gatewayUrl is
	// <MCPGatewayURL>/v1/mcp/<server> unless the MCPServer overrides it.
	MCPGatewayURL string
	// MemoryURL is the memory service's URL, used for Memories that name
	// no endpoint.
	MemoryURL string
	// TraceURL is the trace service's URL.
	TraceURL string
	// AgBOMURL is the AgBOM collection URL; an agent's abomEndpoint is
	// <AgBOMURL>/<agent>.
	AgBOMURL string
}

// WithDefaults returns o with every empty address set to the local-mode
// address of DESIGN.md's port table.
func (o Options) WithDefaults() Options {
	set := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	set(&o.ToolGatewayURL, "http://127.0.0.1:8081")
	set(&o.MCPGatewayURL, "http://127.0.0.1:8082")
	set(&o.MemoryURL, "http://127.0.0.1:8084")
	set(&o.TraceURL, "http://127.0.0.1:8086")
	set(&o.AgBOMURL, "http://127.0.0.1:8080/v1/agbom")
	return o
}

// Validate reports the first address that is not an absolute http(s) URL.
func (o Options) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"ToolGatewayURL", o.ToolGatewayURL}, {"MCPGatewayURL", o.MCPGatewayURL},
		{"MemoryURL", o.MemoryURL}, {"TraceURL", o.TraceURL}, {"AgBOMURL", o.AgBOMURL},
	} {
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("compile: Options.%s %q must be an absolute http or https URL", f.name, f.v)
		}
	}
	return nil
}

func joinURL(base string, parts ...string) string {
	return strings.TrimRight(base, "/") + "/" + strings.Join(parts, "/")
}
