package resource

// Typed views of every kind's spec (and status where the system writes one),
// as documented in docs/resources.md. Objects keep spec as a generic map;
// obtain a typed view with DecodeSpec[T] and turn one back with ToMap.

// Side-effect classes of a Tool (SPEC.md "Side-effect classes").
const (
	SideEffectReadOnly      = "read_only"
	SideEffectLocalWrite    = "local_write"
	SideEffectExternalWrite = "external_write"
	SideEffectFinancial     = "financial"
	SideEffectCommunication = "communication"
	SideEffectCodeExecution = "code_execution"
	SideEffectPrivileged    = "privileged"
)

// SideEffectClasses returns every side-effect class in SPEC.md's order.
func SideEffectClasses() []string {
	return []string{
		SideEffectReadOnly, SideEffectLocalWrite, SideEffectExternalWrite,
		SideEffectFinancial, SideEffectCommunication, SideEffectCodeExecution,
		SideEffectPrivileged,
	}
}

// DefaultRequiresApproval reports whether a tool of the given side-effect
// class needs approval when neither the Tool nor a policy says otherwise:
// true for financial, privileged and communication.
func DefaultRequiresApproval(class string) bool {
	switch class {
	case SideEffectFinancial, SideEffectPrivileged, SideEffectCommunication:
		return true
	}
	return false
}

// DefaultTraceSensitivity returns the trace sensitivity of a side-effect
// class when the Tool names none: high for financial, privileged and
// communication, medium for external_write and code_execution, else low.
func DefaultTraceSensitivity(class string) string {
	switch class {
	case SideEffectFinancial, SideEffectPrivileged, SideEffectCommunication:
		return "high"
	case SideEffectExternalWrite, SideEffectCodeExecution:
		return "medium"
	}
	return "low"
}

// ModelRouteID returns the route id of a model, "<provider>:<model>".
func ModelRouteID(provider, model string) string { return provider + ":" + model }

// Tool sources.
const (
	ToolSourceFunction = "function"
	ToolSourceREST     = "rest"
	ToolSourceMCP      = "mcp"
	ToolSourceOS       = "os"
)

// MCP server transports.
const (
	MCPTransportHTTP  = "http"
	MCPTransportStdio = "stdio"
)

// Policy hooks.
const (
	HookPreflight       = "preflight"
	HookToolCallRequest = "toolCallRequest"
	HookToolCallResult  = "toolCallResult"
	HookModelCall       = "modelCall"
	// HookStep is every other AOS step an agent reports (steps/message,
	// protocols/MCP, A2A methods …); rules see input {method, params}.
	HookStep = "step"
)

// Policy rule actions.
const (
	ActionAllow           = "allow"
	ActionDeny            = "deny"
	ActionModify          = "modify"
	ActionRequireApproval = "require_approval"
)

// ToolCall phases (DESIGN.md "Tool gateway").
const (
	ToolCallPending          = "Pending"
	ToolCallAwaitingApproval = "AwaitingApproval"
	ToolCallRunning          = "Running"
	ToolCallSucceeded        = "Succeeded"
	ToolCallFailed           = "Failed"
	ToolCallDenied           = "Denied"
	ToolCallCancelled        = "Cancelled"
	ToolCallExpired          = "Expired"
)

// ToolCallFinished reports whether a ToolCall phase is terminal.
func ToolCallFinished(phase string) bool {
	switch phase {
	case ToolCallSucceeded, ToolCallFailed, ToolCallDenied, ToolCallCancelled, ToolCallExpired:
		return true
	}
	return false
}

// Approval statuses, used both in ToolCall spec.approval.status and in
// Approval status.status.
const (
	ApprovalNotRequired = "not_required"
	ApprovalPending     = "pending"
	ApprovalApproved    = "approved"
	ApprovalDenied      = "denied"
	ApprovalExpired     = "expired"
	ApprovalOverridden  = "overridden"
)

// Execution phases.
const (
	ExecutionPending   = "Pending"
	ExecutionScheduled = "Scheduled"
	ExecutionRunning   = "Running"
	ExecutionSucceeded = "Succeeded"
	ExecutionFailed    = "Failed"
	ExecutionCancelled = "Cancelled"
)

// LocalRef is a reference to another resource of the same namespace.
type LocalRef struct {
	// Name is the referenced resource's metadata.name.
	Name string `json:"name"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	Name string `json:"name"`
	// Key is the key inside the Secret's data.
	Key string `json:"key"`
}

// Condition is one observation of a resource's state, as in Kubernetes.
type Condition struct {
	// Type is the condition's type, e.g. "Compiled".
	Type string `json:"type"`
	// Status is "True", "False" or "Unknown".
	Status string `json:"status"`
	// Reason is a CamelCase machine-readable reason.
	Reason string `json:"reason,omitempty"`
	// Message says what happened in words.
	Message string `json:"message,omitempty"`
	// LastTransitionTime is an RFC 3339 UTC timestamp.
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// AgentSpec is the spec of an Agent.
type AgentSpec struct {
	// Description says what the agent does.
	Description string `json:"description,omitempty"`
	// Framework names the framework adapter that runs the agent.
	Framework AgentFramework `json:"framework"`
	// SystemPrompt is the agent's system prompt.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// ModelRoute names the Models the agent may call, in order.
	ModelRoute AgentModelRoute `json:"modelRoute"`
	// Requires lists the capabilities the agent needs from its models.
	Requires *AgentRequires `json:"requires,omitempty"`
	// Tools are the Tools the agent may call.
	Tools []AgentTool `json:"tools,omitempty"`
	// MCPServers are the MCP servers the agent may reach.
	MCPServers []LocalRef `json:"mcpServers,omitempty"`
	// Memory binds Memory resources to the agent.
	Memory *AgentMemory `json:"memory,omitempty"`
	// Policies are names of Policies bound explicitly.
	Policies []string `json:"policies,omitempty"`
}

// AgentFramework identifies the framework adapter of an Agent.
type AgentFramework struct {
	// Adapter is the adapter id, e.g. "langgraph".
	Adapter string `json:"adapter"`
	// Version is the adapter image tag; default "latest".
	Version string `json:"version,omitempty"`
	// Image overrides the adapter image; default
	// "ghcr.io/warden-dev/adapter-<adapter>:<version>".
	Image string `json:"image,omitempty"`
}

// AgentModelRoute names an Agent's primary Model and its fallbacks.
type AgentModelRoute struct {
	// Primary is the name of a Model.
	Primary string `json:"primary"`
	// Fallback are names of Models tried in order.
	Fallback []string `json:"fallback,omitempty"`
}

// AgentRequires lists the model capabilities an Agent needs.
type AgentRequires struct {
	// ToolUse is true when the agent calls tools; defaulted from spec.tools.
	ToolUse bool `json:"toolUse,omitempty"`
	// Streaming requires streaming responses.
	Streaming bool `json:"streaming,omitempty"`
	// Vision requires image input.
	Vision bool `json:"vision,omitempty"`
	// JSONMode requires structured JSON output.
	JSONMode bool `json:"jsonMode,omitempty"`
	// MinContextWindow is the smallest acceptable context window in tokens.
	MinContextWindow int64 `json:"minContextWindow,omitempty"`
}

// AgentTool is one Tool an Agent may call.
type AgentTool struct {
	// Name is the Tool's name, "<system>.<action>".
	Name string `json:"name"`
	// RequiresApproval, when set, overrides the Tool's default.
	RequiresApproval *bool `json:"requiresApproval,omitempty"`
}

// AgentMemory binds Memory resources and knowledge to an Agent.
type AgentMemory struct {
	// Working is the name of the working Memory.
	Working string `json:"working,omitempty"`
	// Knowledge are names of RAGIndexes of the agent's namespace it may
	// retrieve from.
	Knowledge []string `json:"knowledge,omitempty"`
}

// AgentStatus is the status of an Agent.
type AgentStatus struct {
	// CompiledManifest is the name of the newest manifest, "<agent>-g<N>".
	CompiledManifest string `json:"compiledManifest,omitempty"`
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the agent's conditions.
	Conditions []Condition `json:"conditions,omitempty"`
}

// ModelSpec is the spec of a Model.
type ModelSpec struct {
	// Provider is the provider id, e.g. "openai".
	Provider string `json:"provider"`
	// Model is the provider's model id, e.g. "gpt-4o".
	Model string `json:"model"`
	// Version is the model's version or snapshot where the id does not
	// pin one, e.g. "2024-08-06"; shown in the agent's AgBOM.
	Version string `json:"version,omitempty"`
	// Endpoint is the provider's base URL; empty means the provider default.
	Endpoint string `json:"endpoint,omitempty"`
	// APIKeySecretRef names the Secret key holding the API key.
	APIKeySecretRef *SecretKeyRef `json:"apiKeySecretRef,omitempty"`
	// Capabilities are what the model can do.
	Capabilities ModelCapabilities `json:"capabilities,omitzero"`
	// Cost is the price of the model's tokens.
	Cost ModelCost `json:"cost,omitzero"`
}

// ModelCapabilities are what a Model can do.
type ModelCapabilities struct {
	// ToolUse is true when the model can call tools.
	ToolUse bool `json:"toolUse,omitempty"`
	// Streaming is true when the model can stream.
	Streaming bool `json:"streaming,omitempty"`
	// Vision is true when the model accepts images.
	Vision bool `json:"vision,omitempty"`
	// JSONMode is true when the model can be held to JSON output.
	JSONMode bool `json:"jsonMode,omitempty"`
	// ContextWindow is the context window in tokens.
	ContextWindow int64 `json:"contextWindow,omitempty"`
}

// ModelCost is the price of a Model's tokens in USD per million.
type ModelCost struct {
	// InputPerMillion is the price of a million input tokens.
	InputPerMillion float64 `json:"inputPerMillion,omitempty"`
	// OutputPerMillion is the price of a million output tokens.
	OutputPerMillion float64 `json:"outputPerMillion,omitempty"`
}

// ToolSpec is the spec of a Tool.
type ToolSpec struct {
	// Description says what the tool does.
	Description string `json:"description,omitempty"`
	// Source is function, rest, mcp or os.
	Source string `json:"source"`
	// SideEffect is the tool's side-effect class.
	SideEffect string `json:"sideEffect"`
	// RequiresApproval is defaulted from the side-effect class.
	RequiresApproval *bool `json:"requiresApproval,omitempty"`
	// InputSchema is the JSON Schema of the arguments.
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	// OutputSchema is the JSON Schema of the result.
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	// REST configures a tool with source rest.
	REST *ToolREST `json:"rest,omitempty"`
	// MCP configures a tool with source mcp.
	MCP *ToolMCP `json:"mcp,omitempty"`
	// OS configures a tool with source os.
	OS *ToolOS `json:"os,omitempty"`
	// GatewayURL overrides the tool gateway URL.
	GatewayURL string `json:"gatewayUrl,omitempty"`
	// CostPerCall is the price of one call in USD.
	CostPerCall float64 `json:"costPerCall,omitempty"`
	// Safety configures output scanning.
	Safety *ToolSafety `json:"safety,omitempty"`
	// Observability configures tracing of the tool's calls.
	Observability *ToolObservability `json:"observability,omitempty"`
}

// ToolREST configures an HTTP tool.
type ToolREST struct {
	// URL is the endpoint called.
	URL string `json:"url"`
	// Method is the HTTP method; default POST.
	Method string `json:"method,omitempty"`
	// Headers are sent with every call.
	Headers map[string]string `json:"headers,omitempty"`
	// HeaderSecrets maps a header to the Secret key holding its value.
	HeaderSecrets map[string]SecretKeyRef `json:"headerSecrets,omitempty"`
	// Timeout is a Go duration; default "30s".
	Timeout string `json:"timeout,omitempty"`
	// MaxResponseBytes bounds the response read; default 1048576.
	MaxResponseBytes int64 `json:"maxResponseBytes,omitempty"`
}

// ToolMCP configures a tool served by an MCPServer.
type ToolMCP struct {
	// Server is the MCPServer's name.
	Server string `json:"server"`
	// Tool is the tool's name on the server.
	Tool string `json:"tool"`
}

// ToolOS configures a tool that runs a command in the sandbox.
type ToolOS struct {
	// Command is the argv run.
	Command []string `json:"command"`
	// Timeout is a Go duration; default "10s".
	Timeout string `json:"timeout,omitempty"`
	// CPUSeconds bounds CPU time.
	CPUSeconds int64 `json:"cpuSeconds,omitempty"`
	// MemoryMB bounds memory.
	MemoryMB int64 `json:"memoryMB,omitempty"`
	// AllowRead are paths the command may read.
	AllowRead []string `json:"allowRead,omitempty"`
	// AllowWrite are paths the command may write.
	AllowWrite []string `json:"allowWrite,omitempty"`
	// AllowHosts are hosts the command may reach.
	AllowHosts []string `json:"allowHosts,omitempty"`
}

// ToolSafety configures scanning of a Tool's output.
type ToolSafety struct {
	// RedactPII replaces personal data in results.
	RedactPII bool `json:"redactPII,omitempty"`
	// ScanInjection is off, flag, redact or block; default flag.
	ScanInjection string `json:"scanInjection,omitempty"`
	// MaxOutputBytes truncates larger results; 0 means no limit.
	MaxOutputBytes int64 `json:"maxOutputBytes,omitempty"`
}

// ToolObservability configures tracing of a Tool's calls.
type ToolObservability struct {
	// TraceSensitivity is low, medium or high; default by class.
	TraceSensitivity string `json:"traceSensitivity,omitempty"`
	// RecordOutput records results in traces; default true.
	RecordOutput *bool `json:"recordOutput,omitempty"`
}

// MCPServerSpec is the spec of an MCPServer.
type MCPServerSpec struct {
	// URL is the streamable-HTTP endpoint (transport http).
	URL string `json:"url,omitempty"`
	// Transport is http or stdio; default http.
	Transport string `json:"transport,omitempty"`
	// Command is the argv started for transport stdio.
	Command []string `json:"command,omitempty"`
	// PinnedVersion is the server version pinned; empty means unpinned.
	PinnedVersion string `json:"pinnedVersion,omitempty"`
	// TrustScore is between 0 and 1; default 0.5.
	TrustScore *float64 `json:"trustScore,omitempty"`
	// Quarantined blocks every call to the server.
	Quarantined bool `json:"quarantined,omitempty"`
	// GatewayURL overrides the MCP gateway URL.
	GatewayURL string `json:"gatewayUrl,omitempty"`
}

// PolicySpec is the spec of a Policy.
type PolicySpec struct {
	// Version is shown as "<policy>@<version>"; default the generation.
	Version string `json:"version,omitempty"`
	// Description says what the policy is for.
	Description string `json:"description,omitempty"`
	// Selector chooses where the policy applies; empty lists mean all.
	Selector *PolicySelector `json:"selector,omitempty"`
	// Rules are evaluated in order.
	Rules []PolicyRule `json:"rules"`
	// Idempotency configures tool-call deduplication.
	Idempotency *PolicyIdempotency `json:"idempotency,omitempty"`
	// Limits are rate limits and budgets.
	Limits []PolicyLimit `json:"limits,omitempty"`
	// Approval configures approvals.
	Approval *PolicyApproval `json:"approval,omitempty"`
	// Guardians are external Guardian Agents called over AOS.
	Guardians []PolicyGuardian `json:"guardians,omitempty"`
}

// PolicyGuardian is an external Guardian Agent, called over the AOS
// JSON-RPC contract at the hooks it names.
type PolicyGuardian struct {
	// URL is the guardian's AOS endpoint.
	URL string `json:"url"`
	// Hooks are toolCallRequest and/or toolCallResult; default
	// [toolCallRequest].
	Hooks []string `json:"hooks,omitempty"`
	// Timeout is a Go duration; default "2s".
	Timeout string `json:"timeout,omitempty"`
	// FailOpen allows the call when the guardian fails; default deny.
	FailOpen bool `json:"failOpen,omitempty"`
}

// PolicySelector chooses the namespaces, environments and agents a Policy
// applies to; an empty list means all.
type PolicySelector struct {
	// Namespaces are namespace names.
	Namespaces []string `json:"namespaces,omitempty"`
	// Environments are environment names.
	Environments []string `json:"environments,omitempty"`
	// Agents are agent names.
	Agents []string `json:"agents,omitempty"`
}

// PolicyRule is one rule of a Policy.
type PolicyRule struct {
	// Name is a DNS-1123 label unique in the policy.
	Name string `json:"name"`
	// Hooks are the hooks the rule runs at; default [toolCallRequest].
	Hooks []string `json:"hooks,omitempty"`
	// When is a CEL expression that must evaluate to bool.
	When string `json:"when"`
	// Action is allow, deny, modify or require_approval.
	Action string `json:"action"`
	// Message is shown when the rule fires.
	Message string `json:"message,omitempty"`
	// Modify says how to change the input for action modify.
	Modify *PolicyModify `json:"modify,omitempty"`
}

// PolicyModify changes a tool call's input.
type PolicyModify struct {
	// Set maps an input path to a CEL expression giving its new value.
	Set map[string]string `json:"set,omitempty"`
	// Remove lists input paths to delete.
	Remove []string `json:"remove,omitempty"`
}

// PolicyIdempotency configures tool-call deduplication.
type PolicyIdempotency struct {
	// Window is a Go duration; default "10m".
	Window string `json:"window,omitempty"`
	// AllowForce lets a caller re-execute with force=true.
	AllowForce bool `json:"allowForce,omitempty"`
}

// PolicyLimit is one rate limit or budget.
type PolicyLimit struct {
	// Scope is tool, agent, namespace or model (model router only).
	Scope string `json:"scope"`
	// Match is a name of the scope, or "*".
	Match string `json:"match"`
	// Window is a Go duration.
	Window string `json:"window"`
	// MaxCalls bounds the number of calls in the window.
	MaxCalls int64 `json:"maxCalls,omitempty"`
	// MaxCost bounds the cost in USD in the window.
	MaxCost float64 `json:"maxCost,omitempty"`
	// MaxTokens bounds the model tokens (prompt and completion) in the
	// window; only the model router counts tokens.
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// Mode is hard (deny) or soft (warn); default hard.
	Mode string `json:"mode,omitempty"`
}

// PolicyApproval configures approvals.
type PolicyApproval struct {
	// Timeout is a Go duration; default "24h".
	Timeout string `json:"timeout,omitempty"`
}

// DeploymentSpec is the spec of a Deployment.
type DeploymentSpec struct {
	// AgentRef names the Agent deployed.
	AgentRef LocalRef `json:"agentRef"`
	// Environment names the Environment.
	Environment string `json:"environment"`
	// Runtime is the runtime adapter id; default "local".
	Runtime string `json:"runtime,omitempty"`
	// Replicas is between 0 and 100; default 1.
	Replicas *int64 `json:"replicas,omitempty"`
}

// EnvironmentSpec is the spec of an Environment.
type EnvironmentSpec struct {
	// Tier is dev, staging or prod.
	Tier string `json:"tier,omitempty"`
	// Description says what the environment is for.
	Description string `json:"description,omitempty"`
	// PromotesTo names the next Environment.
	PromotesTo string `json:"promotesTo,omitempty"`
}

// ExecutionSpec is the spec of an Execution.
type ExecutionSpec struct {
	// AgentRef names the Agent run.
	AgentRef LocalRef `json:"agentRef"`
	// Input is the run's input.
	Input map[string]any `json:"input,omitempty"`
	// Environment names the Environment.
	Environment string `json:"environment,omitempty"`
	// Manifest names the CompiledAgentManifest run.
	Manifest string `json:"manifest,omitempty"`
}

// ExecutionStatus is the status of an Execution.
type ExecutionStatus struct {
	// Phase is Pending, Scheduled, Running, Waiting (a tool call awaits
	// approval), Succeeded, Failed or Cancelled.
	Phase string `json:"phase,omitempty"`
	// StartedAt is an RFC 3339 UTC timestamp.
	StartedAt string `json:"startedAt,omitempty"`
	// CompletedAt is an RFC 3339 UTC timestamp.
	CompletedAt string `json:"completedAt,omitempty"`
	// Output is the run's result.
	Output map[string]any `json:"output,omitempty"`
	// Error says why the run failed.
	Error string `json:"error,omitempty"`
	// Steps is how many model calls the run made so far.
	Steps int64 `json:"steps,omitempty"`
	// ToolCalls names the ToolCalls the run made so far.
	ToolCalls []string `json:"toolCalls,omitempty"`
	// WaitingOn names the ToolCall awaiting approval while Waiting.
	WaitingOn string `json:"waitingOn,omitempty"`
}

// ToolCallSpec is the spec of a ToolCall, exactly SPEC.md's fields.
type ToolCallSpec struct {
	// ExecutionRef names the Execution.
	ExecutionRef LocalRef `json:"executionRef"`
	// AgentRef names the Agent.
	AgentRef LocalRef `json:"agentRef"`
	// ToolRef names the Tool, "<system>.<action>".
	ToolRef LocalRef `json:"toolRef"`
	// Input is the tool's arguments.
	Input map[string]any `json:"input,omitempty"`
	// SideEffects carries the class and the idempotency key.
	SideEffects ToolCallSideEffects `json:"sideEffects"`
	// Approval records whether and by whom the call was approved.
	Approval ToolCallApproval `json:"approval"`
}

// ToolCallSideEffects is spec.sideEffects of a ToolCall.
type ToolCallSideEffects struct {
	// Level is the side-effect class.
	Level string `json:"level"`
	// IdempotencyKey is the call's idempotency key.
	IdempotencyKey string `json:"idempotencyKey"`
}

// ToolCallApproval is spec.approval of a ToolCall.
type ToolCallApproval struct {
	// Required is true when the call needs approval.
	Required bool `json:"required"`
	// Status is not_required, pending, approved, denied, expired or overridden.
	Status string `json:"status"`
	// ApprovedBy is the identity (an e-mail or credential subject) of who
	// approved the call; set only when it was approved (or overridden to
	// run).
	ApprovedBy string `json:"approvedBy,omitempty"`
	// DecidedBy is the identity of who decided the approval, whatever the
	// decision (approve, deny, override).
	DecidedBy string `json:"decidedBy,omitempty"`
}

// ToolCallStatus is the status of a ToolCall, exactly SPEC.md's fields.
type ToolCallStatus struct {
	// Phase is Pending, AwaitingApproval, Running, Succeeded, Failed,
	// Denied, Cancelled or Expired.
	Phase string `json:"phase"`
	// StartedAt is an ISO 8601 UTC timestamp.
	StartedAt string `json:"startedAt,omitempty"`
	// CompletedAt is an ISO 8601 UTC timestamp.
	CompletedAt string `json:"completedAt,omitempty"`
	// Output is the tool's result.
	Output map[string]any `json:"output,omitempty"`
}

// ApprovalSpec is the spec of an Approval.
type ApprovalSpec struct {
	// ToolCallRef names the paused ToolCall.
	ToolCallRef LocalRef `json:"toolCallRef"`
	// AgentRef names the calling Agent.
	AgentRef LocalRef `json:"agentRef"`
	// ToolRef names the Tool.
	ToolRef LocalRef `json:"toolRef"`
	// SideEffect is the tool's side-effect class.
	SideEffect string `json:"sideEffect"`
	// Reason says why approval is needed.
	Reason string `json:"reason,omitempty"`
	// ExpiresAt is an RFC 3339 UTC timestamp.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Input is the call's input as its record holds it (redacted).
	Input map[string]any `json:"input,omitempty"`
	// Policy is <policy>@<version> whose Rule asked for approval; empty
	// when the side-effect class or the tool did.
	Policy string `json:"policy,omitempty"`
	Rule   string `json:"rule,omitempty"`
}

// ApprovalStatus is the status of an Approval.
type ApprovalStatus struct {
	// Status is pending, approved, denied, expired or overridden.
	Status string `json:"status"`
	// DecidedBy is the approver's identity.
	DecidedBy string `json:"decidedBy,omitempty"`
	// DecidedAt is an RFC 3339 UTC timestamp.
	DecidedAt string `json:"decidedAt,omitempty"`
	// Rationale is the approver's reason.
	Rationale string `json:"rationale,omitempty"`
	// Channel is how the decision arrived: api, console, email, webhook
	// or slack.
	Channel string `json:"channel,omitempty"`
}

// ConversationSpec is the spec of a Conversation.
type ConversationSpec struct {
	// AgentRef names the Agent.
	AgentRef LocalRef `json:"agentRef"`
	// ExecutionRef names the Execution, if any.
	ExecutionRef *LocalRef `json:"executionRef,omitempty"`
	// MemoryRef names the Memory holding the messages, if any.
	MemoryRef *LocalRef `json:"memoryRef,omitempty"`
	// Retention is a Go duration.
	Retention string `json:"retention,omitempty"`
}

// CompiledAgentManifestSpec is the spec of a CompiledAgentManifest, exactly
// SPEC.md's fields.
type CompiledAgentManifestSpec struct {
	// Agent identifies the compiled agent.
	Agent ManifestAgent `json:"agent"`
	// Framework names the adapter and its image.
	Framework ManifestFramework `json:"framework"`
	// ModelRoute holds route ids "<provider>:<model>".
	ModelRoute ManifestModelRoute `json:"modelRoute"`
	// Tools are the resolved tools.
	Tools []ManifestTool `json:"tools"`
	// MCPServers are the resolved MCP servers.
	MCPServers []ManifestMCPServer `json:"mcpServers"`
	// Memories are the resolved memories.
	Memories ManifestMemories `json:"memories,omitzero"`
	// Policies are the resolved policies.
	Policies ManifestPolicies `json:"policies"`
	// Observability holds the endpoints telemetry goes to.
	Observability ManifestObservability `json:"observability,omitzero"`
}

// ManifestAgent is spec.agent of a CompiledAgentManifest.
type ManifestAgent struct {
	// Name is the Agent's name.
	Name string `json:"name"`
	// Generation is the Agent's generation.
	Generation int64 `json:"generation"`
}

// ManifestFramework is spec.framework of a CompiledAgentManifest.
type ManifestFramework struct {
	// Adapter is the adapter id.
	Adapter string `json:"adapter"`
	// AdapterImage is the image reference including a version.
	AdapterImage string `json:"adapterImage"`
}

// ManifestModelRoute is spec.modelRoute of a CompiledAgentManifest.
type ManifestModelRoute struct {
	// Primary is "<provider>:<model>".
	Primary string `json:"primary"`
	// Fallback are "<provider>:<model>" in order.
	Fallback []string `json:"fallback"`
}

// ManifestTool is one item of spec.tools of a CompiledAgentManifest.
type ManifestTool struct {
	// Name is "<system>.<action>".
	Name string `json:"name"`
	// GatewayURL is where the agent calls the tool.
	GatewayURL string `json:"gatewayUrl"`
	// SideEffect is the side-effect class.
	SideEffect string `json:"sideEffect"`
	// SchemaSha is "sha256:<hex>", present when the tool has an input schema.
	SchemaSha string `json:"schemaSha,omitempty"`
	// RequiresApproval is present only when true.
	RequiresApproval bool `json:"requiresApproval,omitempty"`
}

// ManifestMCPServer is one item of spec.mcpServers of a CompiledAgentManifest.
type ManifestMCPServer struct {
	// Name is the MCPServer's name.
	Name string `json:"name"`
	// GatewayURL is where the agent reaches the server.
	GatewayURL string `json:"gatewayUrl"`
	// PinnedVersion is the pinned server version, possibly empty.
	PinnedVersion string `json:"pinnedVersion"`
	// TrustScore is between 0 and 1.
	TrustScore float64 `json:"trustScore"`
}

// ManifestMemories is spec.memories of a CompiledAgentManifest.
type ManifestMemories struct {
	// Working is the working memory, if the agent has one.
	Working *ManifestMemory `json:"working,omitempty"`
	// Knowledge are the RAG indexes the agent may retrieve from, in the
	// agent's order; absent when it has none.
	Knowledge []ManifestKnowledge `json:"knowledge,omitempty"`
}

// ManifestKnowledge is one resolved RAG index of spec.memories.knowledge.
type ManifestKnowledge struct {
	// Endpoint is the RAG service URL.
	Endpoint string `json:"endpoint"`
	// Namespace is the RAGIndex's namespace.
	Namespace string `json:"namespace"`
	// Name is the RAGIndex's name.
	Name string `json:"name"`
	// Sources are the index's KnowledgeSource names, in its order.
	Sources []string `json:"sources"`
	// EmbeddingModel is the route id "<provider>:<model>" of the index's
	// embedding Model; absent when the index ranks with BM25 only.
	EmbeddingModel string `json:"embeddingModel,omitempty"`
}

// ManifestMemory is one resolved memory.
type ManifestMemory struct {
	// Endpoint is the memory service URL.
	Endpoint string `json:"endpoint"`
	// Namespace is the Memory's namespace.
	Namespace string `json:"namespace"`
	// Name is the Memory's name.
	Name string `json:"name"`
}

// ManifestPolicies is spec.policies of a CompiledAgentManifest.
type ManifestPolicies struct {
	// Resolved are "<policy>@<version>".
	Resolved []string `json:"resolved"`
}

// ManifestObservability is spec.observability of a CompiledAgentManifest.
type ManifestObservability struct {
	// TraceEndpoint is where traces go.
	TraceEndpoint string `json:"traceEndpoint"`
	// AbomEndpoint is where the AgBOM is served.
	AbomEndpoint string `json:"abomEndpoint"`
}

// MemorySpec is the spec of a Memory.
type MemorySpec struct {
	// Type is working, episodic or semantic; default working.
	Type string `json:"type,omitempty"`
	// TTL is a Go duration after which items expire.
	TTL string `json:"ttl,omitempty"`
	// MaxItems bounds the items kept; default 1000.
	MaxItems int64 `json:"maxItems,omitempty"`
	// Endpoint is the memory service URL; empty means the built-in one.
	Endpoint string `json:"endpoint,omitempty"`
	// Scope says who shares items: namespace, agent or conversation;
	// empty means agent.
	Scope string `json:"scope,omitempty"`
	// RedactPII redacts personal data and secrets from items before they
	// are stored; nil means true.
	RedactPII *bool `json:"redactPII,omitempty"`
	// Summarize configures summary passes.
	Summarize *MemorySummarize `json:"summarize,omitempty"`
}

// MemorySummarize configures a Memory's summary passes.
type MemorySummarize struct {
	// Model is asked for the summary through the model router; empty
	// means an extractive summary.
	Model string `json:"model,omitempty"`
	// KeepRecent is how many newest items a pass leaves alone; nil means
	// 20.
	KeepRecent *int64 `json:"keepRecent,omitempty"`
	// Policy is mark (summarized items are kept but hidden from queries)
	// or delete; empty means mark.
	Policy string `json:"policy,omitempty"`
}

// RAGIndexSpec is the spec of a RAGIndex.
type RAGIndexSpec struct {
	// Sources are KnowledgeSource names.
	Sources []string `json:"sources,omitempty"`
	// Embedding names the embedding Model.
	Embedding *RAGEmbedding `json:"embedding,omitempty"`
	// Chunking configures how documents are split.
	Chunking *RAGChunking `json:"chunking,omitempty"`
	// TopK is the number of results returned; default 5.
	TopK int64 `json:"topK,omitempty"`
	// ScanInjection is what retrieval does with chunks in which the
	// prompt-injection scan finds something: off, flag, redact (the
	// default) or block (withhold the chunk).
	ScanInjection string `json:"scanInjection,omitempty"`
}

// RAGEmbedding names the embedding Model of a RAGIndex.
type RAGEmbedding struct {
	// ModelRef is a Model name.
	ModelRef string `json:"modelRef,omitempty"`
}

// RAGChunking configures chunking of a RAGIndex.
type RAGChunking struct {
	// Size is the chunk size in characters; default 800.
	Size int64 `json:"size,omitempty"`
	// Overlap is the overlap in characters; default 100.
	Overlap int64 `json:"overlap,omitempty"`
}

// KnowledgeSourceSpec is the spec of a KnowledgeSource.
type KnowledgeSourceSpec struct {
	// Type is url, git, s3 or inline.
	Type string `json:"type"`
	// URL is the source location for url, git and s3.
	URL string `json:"url,omitempty"`
	// Content is the text for type inline.
	Content string `json:"content,omitempty"`
	// Schedule is an optional cron expression.
	Schedule string `json:"schedule,omitempty"`
	// Path is, for type file, a file or directory relative to the RAG
	// service's allowed root.
	Path string `json:"path,omitempty"`
	// Documents are the documents of type inline, besides Content.
	Documents []KnowledgeDocument `json:"documents,omitempty"`
	// Metadata is attached to every chunk of the source, for retrieval
	// filters.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// KnowledgeDocument is one inline document of a KnowledgeSource.
type KnowledgeDocument struct {
	// ID identifies the document within its source.
	ID string `json:"id"`
	// Title is shown in citations.
	Title string `json:"title,omitempty"`
	// Content is the document's text.
	Content string `json:"content"`
	// Metadata is attached to the document's chunks.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// KnowledgeSourceStatus is the status of a KnowledgeSource.
type KnowledgeSourceStatus struct {
	// Phase is Pending, Syncing, Ready or Failed.
	Phase string `json:"phase,omitempty"`
	// LastSyncAt is an RFC 3339 UTC timestamp.
	LastSyncAt string `json:"lastSyncAt,omitempty"`
	// Index is the RAGIndex whose refresh wrote this status.
	Index string `json:"index,omitempty"`
	// Documents is how many documents the last sync read.
	Documents int `json:"documents"`
	// Chunks is how many chunks the source has in Index.
	Chunks int `json:"chunks"`
	// Errors are the problems of the last sync (at most 20), such as a
	// document too large or a fetch that failed.
	Errors []string `json:"errors,omitempty"`
}

// RoleBindingSpec is the spec of a RoleBinding.
type RoleBindingSpec struct {
	// Role is viewer, editor, approver or admin.
	Role string `json:"role"`
	// Subjects are who get the role.
	Subjects []RoleSubject `json:"subjects"`
}

// RoleSubject is one subject of a RoleBinding.
type RoleSubject struct {
	// Kind is User, Group, APIKey or Agent.
	Kind string `json:"kind"`
	// Name identifies the subject.
	Name string `json:"name"`
}

// SecretSpec is the spec of a Secret.
type SecretSpec struct {
	// Type is the secret's type; default "opaque".
	Type string `json:"type,omitempty"`
	// Data holds the values; write-only, never returned by reads.
	Data map[string]string `json:"data,omitempty"`
	// Keys are the sorted key names, shown on reads instead of Data.
	Keys []string `json:"keys,omitempty"`
}

// TenantSpec is the spec of a Tenant.
type TenantSpec struct {
	// DisplayName is shown in the console.
	DisplayName string `json:"displayName,omitempty"`
	// Owner is the owner's e-mail.
	Owner string `json:"owner,omitempty"`
	// SSO is the tenant's own single sign-on connection, if any.
	SSO *TenantSSO `json:"sso,omitempty"`
	// Retention says how long the tenant's runtime data is kept; nil
	// keeps the defaults (docs/operations.md).
	Retention *TenantRetention `json:"retention,omitempty"`
}

// TenantRetention is spec.retention of a Tenant: how long the retention
// job keeps each kind of runtime data, as Go durations; empty means the
// default.
type TenantRetention struct {
	// ToolCalls is how long a ToolCall is kept after it finished, and an
	// Approval after it was decided or expired; default 720h (30 days).
	// A call that has not finished, and an Approval still pending, are
	// never deleted.
	ToolCalls string `json:"toolCalls,omitempty"`
	// Events is how long internal events are kept; default 168h (7 days).
	Events string `json:"events,omitempty"`
	// Audit is how long audit records are kept; default 8760h (365 days).
	// The chain still verifies from a sealed checkpoint at the cut.
	Audit string `json:"audit,omitempty"`
}

// TenantSSO is a tenant's own OIDC connection: the issuer, Warden's client
// id there, the e-mail domains allowed to sign in, and the mapping of a
// claim's values to namespace roles.
type TenantSSO struct {
	Issuer         string            `json:"issuer,omitempty"`
	ClientID       string            `json:"clientId"`
	AllowedDomains []string          `json:"allowedDomains,omitempty"`
	RoleClaim      string            `json:"roleClaim,omitempty"`
	RoleMapping    map[string]string `json:"roleMapping,omitempty"`
}

// NamespaceSpec is the spec of a Namespace.
type NamespaceSpec struct {
	// DisplayName is shown in the console.
	DisplayName string `json:"displayName,omitempty"`
	// Environment is the namespace's default environment.
	Environment string `json:"environment,omitempty"`
}
