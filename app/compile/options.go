package compile

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Default ports of the services (DESIGN.md's port table).
const (
	DefaultControlPort     = 8080
	DefaultToolGatewayPort = 8081
	DefaultMCPGatewayPort  = 8082
	DefaultModelRouterPort = 8083
	DefaultMemoryPort      = 8084
	DefaultRAGPort         = 8085
	DefaultTracePort       = 8086
)

// Options are the service addresses written into manifests: one place for
// every service URL, filled by `warden up` from its listeners (and the
// public URL when one is set).
type Options struct {
	// ControlURL is the control plane's base URL as agents reach it (the
	// public URL when one is set); the AgBOM endpoint hangs off it.
	ControlURL string
	// ToolGatewayURL is the tool gateway's base URL, used for tools that
	// name no gatewayUrl of their own.
	ToolGatewayURL string
	// MCPGatewayURL is the MCP gateway's base URL; a server's gatewayUrl is
	// <MCPGatewayURL>/v1/mcp/<server> unless the MCPServer overrides it.
	MCPGatewayURL string
	// ModelRouterURL is the model router's base URL.
	ModelRouterURL string
	// MemoryURL is the memory service's URL, used for Memories that name
	// no endpoint.
	MemoryURL string
	// RAGURL is the RAG service's base URL.
	RAGURL string
	// TraceURL is the trace service's URL.
	TraceURL string
	// AgBOMURL is the AgBOM collection URL; an agent's abomEndpoint is
	// <AgBOMURL>/<agent>. Empty means <ControlURL>/v1/agbom.
	AgBOMURL string
}

// LocalOptions returns the address of every service on host (a host name
// or IP, no port) with scheme and the default ports; `warden up` starts
// from it and sets the addresses it was given.
func LocalOptions(scheme, host string) Options {
	at := func(port int) string { return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) }
	return Options{
		ControlURL:     at(DefaultControlPort),
		ToolGatewayURL: at(DefaultToolGatewayPort),
		MCPGatewayURL:  at(DefaultMCPGatewayPort),
		ModelRouterURL: at(DefaultModelRouterPort),
		MemoryURL:      at(DefaultMemoryPort),
		RAGURL:         at(DefaultRAGPort),
		TraceURL:       at(DefaultTracePort),
	}
}

// WithDefaults returns o with every empty address set to the local-mode
// address of DESIGN.md's port table, and AgBOMURL derived from ControlURL.
func (o Options) WithDefaults() Options {
	def := LocalOptions("http", "127.0.0.1")
	set := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	set(&o.ControlURL, def.ControlURL)
	set(&o.ToolGatewayURL, def.ToolGatewayURL)
	set(&o.MCPGatewayURL, def.MCPGatewayURL)
	set(&o.ModelRouterURL, def.ModelRouterURL)
	set(&o.MemoryURL, def.MemoryURL)
	set(&o.RAGURL, def.RAGURL)
	set(&o.TraceURL, def.TraceURL)
	set(&o.AgBOMURL, joinURL(o.ControlURL, "v1", "agbom"))
	return o
}

// Validate reports the first address that is not an absolute http(s) URL.
func (o Options) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"ControlURL", o.ControlURL}, {"ToolGatewayURL", o.ToolGatewayURL}, {"MCPGatewayURL", o.MCPGatewayURL},
		{"ModelRouterURL", o.ModelRouterURL}, {"MemoryURL", o.MemoryURL}, {"RAGURL", o.RAGURL},
		{"TraceURL", o.TraceURL}, {"AgBOMURL", o.AgBOMURL},
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
