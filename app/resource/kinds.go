package resource

import "strings"

// KindInfo describes one kind of the catalog.
type KindInfo struct {
	// Kind is the CamelCase kind name, e.g. "Agent".
	Kind string
	// Plural is the lower-case plural used as the API path segment, e.g. "agents".
	Plural string
	// APIVersion is the only apiVersion accepted for the kind.
	APIVersion string
	// Namespaced is false for kinds that live at tenant scope (Tenant, Namespace).
	Namespaced bool
	// SystemOnly kinds are written by Warden itself; apply, PATCH and PUT by
	// users are refused so that nobody can, say, approve a call by editing it.
	SystemOnly bool
}

// Kind names.
const (
	KindAgent                 = "Agent"
	KindModel                 = "Model"
	KindTool                  = "Tool"
	KindMCPServer             = "MCPServer"
	KindPolicy                = "Policy"
	KindDeployment            = "Deployment"
	KindEnvironment           = "Environment"
	KindExecution             = "Execution"
	KindToolCall              = "ToolCall"
	KindApproval              = "Approval"
	KindConversation          = "Conversation"
	KindCompiledAgentManifest = "CompiledAgentManifest"
	KindMemory                = "Memory"
	KindRAGIndex              = "RAGIndex"
	KindKnowledgeSource       = "KnowledgeSource"
	KindRoleBinding           = "RoleBinding"
	KindSecret                = "Secret"
	KindTenant                = "Tenant"
	KindNamespace             = "Namespace"
	KindNotificationChannel   = "NotificationChannel"
)

// catalog lists every kind in a stable order.
var catalog = []KindInfo{
	{Kind: KindAgent, Plural: "agents", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindModel, Plural: "models", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindTool, Plural: "tools", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindMCPServer, Plural: "mcpservers", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindPolicy, Plural: "policies", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindDeployment, Plural: "deployments", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindEnvironment, Plural: "environments", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindExecution, Plural: "executions", APIVersion: GroupVersion, Namespaced: true, SystemOnly: true},
	{Kind: KindToolCall, Plural: "toolcalls", APIVersion: GroupVersion, Namespaced: true, SystemOnly: true},
	{Kind: KindApproval, Plural: "approvals", APIVersion: GroupVersion, Namespaced: true, SystemOnly: true},
	{Kind: KindConversation, Plural: "conversations", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindCompiledAgentManifest, Plural: "compiledagentmanifests", APIVersion: InternalGroupVersion, Namespaced: true, SystemOnly: true},
	{Kind: KindMemory, Plural: "memories", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindRAGIndex, Plural: "ragindexes", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindKnowledgeSource, Plural: "knowledgesources", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindRoleBinding, Plural: "rolebindings", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindSecret, Plural: "secrets", APIVersion: GroupVersion, Namespaced: true},
	{Kind: KindTenant, Plural: "tenants", APIVersion: GroupVersion, Namespaced: false},
	{Kind: KindNamespace, Plural: "namespaces", APIVersion: GroupVersion, Namespaced: false},
	{Kind: KindNotificationChannel, Plural: "notificationchannels", APIVersion: GroupVersion, Namespaced: true},
}

// Kinds returns the catalog in a stable order.
func Kinds() []KindInfo {
	out := make([]KindInfo, len(catalog))
	copy(out, catalog)
	return out
}

// LookupKind finds a kind by its CamelCase name.
func LookupKind(kind string) (KindInfo, bool) {
	for _, k := range catalog {
		if k.Kind == kind {
			return k, true
		}
	}
	return KindInfo{}, false
}

// LookupPath finds a kind by an API path segment or CLI word: the plural
// ("agents"), the singular ("agent") or the kind name in any case ("Agent").
func LookupPath(segment string) (KindInfo, bool) {
	s := strings.ToLower(segment)
	for _, k := range catalog {
		if k.Plural == s || strings.ToLower(k.Kind) == s {
			return k, true
		}
	}
	return KindInfo{}, false
}

// IsRecordKind reports whether kind is a runtime record written by the
// system as it works (ToolCall, Approval, Execution, Conversation) rather
// than configuration that users apply. Configuration caches ignore records.
func IsRecordKind(kind string) bool {
	switch kind {
	case KindToolCall, KindApproval, KindExecution, KindConversation:
		return true
	}
	return false
}
