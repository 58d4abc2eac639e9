package resource

import "strings"

// MCPServerStatus is the status of an MCPServer, written by the MCP gateway
// (app/mcp) through the status subresource: what the last discovery found,
// the pin's baseline, drift and quarantine.
type MCPServerStatus struct {
	// Server is the implementation the server reported at initialize.
	Server *MCPImplementation `json:"server,omitempty"`
	// ProtocolVersion is the protocol revision negotiated.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Transport is the transport that answered: streamable-http or sse.
	Transport string `json:"transport,omitempty"`
	// DiscoveredAt is when the last successful discovery ran (RFC 3339).
	DiscoveredAt string `json:"discoveredAt,omitempty"`
	// LastAttemptAt is when discovery last ran, successful or not.
	LastAttemptAt string `json:"lastAttemptAt,omitempty"`
	// Error is why the last discovery failed; empty after a success.
	Error string `json:"error,omitempty"`
	// ToolsHash is "sha256:<hex>" over the hashes of every tool definition.
	ToolsHash string `json:"toolsHash,omitempty"`
	// Tools are the server's tools as last discovered.
	Tools []MCPToolStatus `json:"tools,omitempty"`
	// Prompts are the server's prompts, by name.
	Prompts []MCPPromptStatus `json:"prompts,omitempty"`
	// Resources are the server's resources.
	Resources []MCPResourceStatus `json:"resources,omitempty"`
	// Pin is the baseline recorded when the server was pinned.
	Pin *MCPPin `json:"pin,omitempty"`
	// Drift is the difference from the pin found by the last discovery.
	Drift *MCPDrift `json:"drift,omitempty"`
	// Quarantine is set while the server is quarantined: every call is
	// refused with Quarantined.
	Quarantine *MCPQuarantine `json:"quarantine,omitempty"`
}

// MCPImplementation names an MCP server implementation.
type MCPImplementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// MCPToolStatus is one tool of an MCP server as discovered.
type MCPToolStatus struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"inputSchema,omitempty"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	Annotations  map[string]any `json:"annotations,omitempty"`
	// Hash is "sha256:<hex>" of the RFC 8785 JSON of the definition (name,
	// title, description, schemas, annotations).
	Hash string `json:"hash"`
	// SideEffect is the class derived from the annotations (MCPSideEffect).
	SideEffect string `json:"sideEffect"`
	// Findings are what the injection scanner found in the definition.
	Findings []MCPFinding `json:"findings,omitempty"`
	// Blocked is true when a finding withholds the tool from agents.
	Blocked bool `json:"blocked,omitempty"`
}

// MCPFinding is a scanner finding in a tool definition; it never holds the
// matched text.
type MCPFinding struct {
	// Path locates the string in the definition, e.g. $.description.
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	Severity string `json:"severity,omitempty"`
}

// MCPPromptStatus is one prompt of an MCP server.
type MCPPromptStatus struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// MCPResourceStatus is one resource of an MCP server.
type MCPResourceStatus struct {
	URI      string `json:"uri"`
	Name     string `json:"name,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
}

// MCPPin is the baseline of a pin: the version and every tool's hash.
type MCPPin struct {
	Version   string            `json:"version"`
	ToolsHash string            `json:"toolsHash"`
	Tools     map[string]string `json:"tools,omitempty"`
	PinnedAt  string            `json:"pinnedAt,omitempty"`
	PinnedBy  string            `json:"pinnedBy,omitempty"`
}

// MCPDrift is how a discovery differed from the pin.
type MCPDrift struct {
	DetectedAt string `json:"detectedAt"`
	// PinnedVersion and Version are the pinned and the discovered server
	// versions.
	PinnedVersion string `json:"pinnedVersion"`
	Version       string `json:"version"`
	// PinnedToolsHash and ToolsHash are the pinned and discovered hashes.
	PinnedToolsHash string          `json:"pinnedToolsHash,omitempty"`
	ToolsHash       string          `json:"toolsHash"`
	Changes         []MCPToolChange `json:"changes,omitempty"`
}

// MCPToolChange is one tool whose definition moved since the pin.
type MCPToolChange struct {
	Tool string `json:"tool"`
	// Change is changed, added or removed.
	Change  string `json:"change"`
	OldHash string `json:"oldHash,omitempty"`
	NewHash string `json:"newHash,omitempty"`
}

// MCPQuarantine says why and since when a server is quarantined.
type MCPQuarantine struct {
	Reason string `json:"reason"`
	// By is who quarantined it: a person or key, or system:warden for drift
	// and scanner findings.
	By string `json:"by"`
	At string `json:"at"`
}

// MCPPinSeparator separates the version from the tools hash in an
// MCPServer's spec.pinnedVersion ("1.2.0@sha256:<hex>").
const MCPPinSeparator = "@"

// ParseMCPPin splits spec.pinnedVersion into the server version and the
// tools hash; a pin without "@sha256:" pins the version alone.
func ParseMCPPin(pinned string) (version, toolsHash string) {
	if i := strings.LastIndex(pinned, MCPPinSeparator+"sha256:"); i >= 0 {
		return pinned[:i], pinned[i+1:]
	}
	return pinned, ""
}

// MCPPinString is the inverse of ParseMCPPin.
func MCPPinString(version, toolsHash string) string {
	if toolsHash == "" {
		return version
	}
	return version + MCPPinSeparator + toolsHash
}

// MCPSideEffect derives a side-effect class from an MCP tool's annotations:
// readOnlyHint → read_only; an explicit destructiveHint false → local_write
// in a closed world (openWorldHint false), else external_write; destructive
// or unknown → privileged, the strictest class.
func MCPSideEffect(annotations map[string]any) string {
	if ro, _ := annotations["readOnlyHint"].(bool); ro {
		return SideEffectReadOnly
	}
	if d, ok := annotations["destructiveHint"].(bool); ok && !d {
		if ow, ok := annotations["openWorldHint"].(bool); ok && !ow {
			return SideEffectLocalWrite
		}
		return SideEffectExternalWrite
	}
	return SideEffectPrivileged
}

// MCPToolName is the gateway's name of a discovered MCP tool,
// "<server>.<tool>".
func MCPToolName(server, tool string) string { return server + "." + tool }
