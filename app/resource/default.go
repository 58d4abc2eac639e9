package resource

// DefaultNamespace is the namespace of namespaced resources that name none.
const DefaultNamespace = "default"

// Default values of docs/resources.md that Default writes.
const (
	DefaultFrameworkVersion    = "latest"
	DefaultRESTMethod          = "POST"
	DefaultRESTTimeout         = "30s"
	DefaultRESTMaxResponse     = int64(1 << 20)
	DefaultOSTimeout           = "10s"
	DefaultScanInjection       = "flag"
	DefaultMCPTrustScore       = 0.5
	DefaultIdempotencyWindow   = "10m"
	DefaultApprovalTimeout     = "24h"
	DefaultRuntime             = "local"
	DefaultMemoryMaxItems      = int64(1000)
	DefaultChunkSize           = int64(800)
	DefaultChunkOverlap        = int64(100)
	DefaultTopK                = int64(5)
	DefaultSecretType          = "opaque"
	DefaultLimitMode           = "hard"
	adapterImagePrefix         = "ghcr.io/warden-dev/adapter-"
	defaultEnvironmentTierName = "dev"
)

// AdapterImage returns the default adapter image of a framework adapter at a
// version: "ghcr.io/warden-dev/adapter-<adapter>:<version>".
func AdapterImage(adapter, version string) string {
	return adapterImagePrefix + adapter + ":" + version
}

// Default fills the defaults of o's kind in place (spec fields, and the
// namespace "default" for namespaced kinds that name none). It writes only
// fields that are absent, never overwrites a value, and leaves fields of
// the wrong type alone for Validate to report, so it is idempotent and safe
// on invalid input. Defaults whose value is "empty list" or "the service's
// URL" are not written: absence means the same thing.
func Default(o *Object) {
	if o == nil {
		return
	}
	info, ok := LookupKind(o.Kind)
	if !ok {
		return
	}
	if info.Namespaced && o.Metadata.Namespace == "" {
		o.Metadata.Namespace = DefaultNamespace
	}
	if o.Spec == nil {
		o.Spec = map[string]any{}
	}
	s := o.Spec
	switch o.Kind {
	case KindAgent:
		defaultAgent(s)
	case KindTool:
		defaultTool(s)
	case KindMCPServer:
		setDefault(s, "transport", MCPTransportHTTP)
		setDefault(s, "trustScore", DefaultMCPTrustScore)
	case KindPolicy:
		defaultPolicy(s)
	case KindDeployment:
		setDefault(s, "runtime", DefaultRuntime)
		setDefault(s, "replicas", int64(1))
	case KindEnvironment:
		tier := defaultEnvironmentTierName
		switch o.Metadata.Name {
		case "dev", "staging", "prod":
			tier = o.Metadata.Name
		}
		setDefault(s, "tier", tier)
	case KindMemory:
		setDefault(s, "type", "working")
		setDefault(s, "maxItems", DefaultMemoryMaxItems)
	case KindRAGIndex:
		if c := child(s, "chunking"); c != nil {
			setDefault(c, "size", DefaultChunkSize)
			setDefault(c, "overlap", DefaultChunkOverlap)
		}
		setDefault(s, "topK", DefaultTopK)
	case KindSecret:
		setDefault(s, "type", DefaultSecretType)
	}
	if len(o.Spec) == 0 {
		// Kinds without spec defaults keep an absent spec absent.
		o.Spec = nil
	}
}

func defaultAgent(s map[string]any) {
	if fw := child(s, "framework"); fw != nil {
		setDefault(fw, "version", DefaultFrameworkVersion)
		adapter, _ := fw["adapter"].(string)
		version, _ := fw["version"].(string)
		if adapter != "" && version != "" {
			setDefault(fw, "image", AdapterImage(adapter, version))
		}
	}
	if tools, ok := s["tools"].([]any); ok && len(tools) > 0 {
		if req := child(s, "requires"); req != nil {
			setDefault(req, "toolUse", true)
		}
	}
}

func defaultTool(s map[string]any) {
	class, _ := s["sideEffect"].(string)
	if class != "" {
		setDefault(s, "requiresApproval", DefaultRequiresApproval(class))
	}
	setDefault(s, "inputSchema", map[string]any{"type": "object"})
	source, _ := s["source"].(string)
	switch source {
	case ToolSourceREST:
		if r := child(s, "rest"); r != nil {
			setDefault(r, "method", DefaultRESTMethod)
			setDefault(r, "timeout", DefaultRESTTimeout)
			setDefault(r, "maxResponseBytes", DefaultRESTMaxResponse)
		}
	case ToolSourceOS:
		if r := child(s, "os"); r != nil {
			setDefault(r, "timeout", DefaultOSTimeout)
		}
	}
	if sf := child(s, "safety"); sf != nil {
		setDefault(sf, "scanInjection", DefaultScanInjection)
	}
	if ob := child(s, "observability"); ob != nil {
		if class != "" {
			setDefault(ob, "traceSensitivity", DefaultTraceSensitivity(class))
		}
		setDefault(ob, "recordOutput", true)
	}
}

func defaultPolicy(s map[string]any) {
	if rules, ok := s["rules"].([]any); ok {
		for _, r := range rules {
			if rm, ok := r.(map[string]any); ok {
				setDefault(rm, "hooks", []any{HookToolCallRequest})
			}
		}
	}
	if limits, ok := s["limits"].([]any); ok {
		for _, l := range limits {
			if lm, ok := l.(map[string]any); ok {
				setDefault(lm, "mode", DefaultLimitMode)
			}
		}
	}
	if id := child(s, "idempotency"); id != nil {
		setDefault(id, "window", DefaultIdempotencyWindow)
	}
	if ap := child(s, "approval"); ap != nil {
		setDefault(ap, "timeout", DefaultApprovalTimeout)
	}
}

// setDefault sets m[key] = v when key is absent (an explicit null counts as
// absent).
func setDefault(m map[string]any, key string, v any) {
	if cur, ok := m[key]; !ok || cur == nil {
		m[key] = v
	}
}

// child returns the object at m[key], creating it when absent; nil when the
// field holds something other than an object.
func child(m map[string]any, key string) map[string]any {
	cur, ok := m[key]
	if !ok || cur == nil {
		c := map[string]any{}
		m[key] = c
		return c
	}
	c, _ := cur.(map[string]any)
	return c
}
