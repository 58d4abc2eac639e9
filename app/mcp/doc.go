// Package mcp is Warden's MCP gateway (port 8082): it discovers what the
// MCPServers of a namespace offer, pins their versions and tool
// definitions, quarantines servers whose definitions drift or carry
// injected instructions, and proxies tools/call — every call governed by
// the tool gateway's nine steps (app/gateway), which calls back into this
// package at step 7 to reach the server.
//
//	service.go    the Service, its configuration and its cache of servers
//	client.go     connections to MCP servers (streamable HTTP, then the
//	              legacy HTTP+SSE transport), one cached session per server
//	stdio.go      stdio servers: one process per server in the OS sandbox
//	              (app/sandbox), its session over stdin and stdout,
//	              restarts with backoff, stops on delete, quarantine, spec
//	              or Secret changes
//	discover.go   initialize, list tools, prompts and resources, hash and
//	              scan every tool definition, compare with the pin, write
//	              the MCPServer's status
//	pin.go        pin, quarantine, unquarantine, the periodic discovery
//	call.go       the gateway's MCPCaller: tools/call on the server, the
//	              result's content made recordable (images and audio by
//	              size and hash)
//	upstream.go   tools/call posted on a server's streamable-HTTP session
//	              in one round trip, its answer read as JSON or events
//	govern.go     a call through the tool gateway, its outcome as a
//	              CallToolResult
//	jsonrpc.go    the JSON-RPC tools/call parser of POST /v1/mcp/…/call
//	http.go       the HTTP API: discover, call, pin, quarantine, unquarantine
//	agent.go      the per-agent streamable-HTTP MCP endpoint /mcp
//	agentcall.go  plain tools/call on an established session of /mcp,
//	              answered straight from the tool gateway
//
// State lives only in MCPServer resources (spec.pinnedVersion, status), so
// any number of replicas can serve the gateway against the shared store.
package mcp
