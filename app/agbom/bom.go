package agbom

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// Component kinds of a BOM.
const (
	KindAgent           = "agent"
	KindFramework       = "framework"
	KindModel           = "model"
	KindTool            = "tool"
	KindMCPServer       = "mcp-server"
	KindMemory          = "memory"
	KindRAGIndex        = "rag-index"
	KindKnowledgeSource = "knowledge-source"
	KindPolicy          = "policy"
)

// BOM is the format-neutral bill of materials of one compiled manifest.
// It is what Service stores (status.agbom of the manifest) and what each
// format renders. Components and properties are sorted, so that equal
// BOMs encode to equal bytes.
type BOM struct {
	// Namespace, Agent and Generation identify the compiled agent.
	Namespace  string `json:"namespace"`
	Agent      string `json:"agent"`
	Generation int64  `json:"generation"`
	// Manifest is the manifest's name, "<agent>-g<generation>".
	Manifest string `json:"manifest"`
	// ManifestUID is the manifest's uid; the documents' serial numbers
	// derive from it, so they stay the same across rewrites.
	ManifestUID string `json:"manifestUid"`
	// ManifestSha is "sha256:<hex>" of the canonical JSON of the
	// manifest's spec: a stored BOM is current while it matches.
	ManifestSha string `json:"manifestSha"`
	// Revision counts the versions of this generation's BOM, from 1; it
	// moves when a rewrite of the manifest (or of a dependency) changes
	// the BOM. CycloneDX shows it as the BOM version.
	Revision int64 `json:"revision"`
	// CompiledAt is when the manifest's content was compiled (RFC 3339
	// UTC): the time of its AgentCompiled event, else its
	// creationTimestamp.
	CompiledAt string `json:"compiledAt"`
	// WardenVersion is the version of Warden that compiled the manifest.
	WardenVersion string `json:"wardenVersion"`
	// Endpoint is the manifest's abomEndpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Components are every part of the agent, itself included (Ref
	// "agent:<name>"), sorted by Ref.
	Components []Component `json:"components"`
	// Dependencies say which component uses which, sorted by Ref.
	Dependencies []Dependency `json:"dependencies"`
}

// Component is one part of an agent.
type Component struct {
	// Ref identifies the component within the agent across generations:
	// "<kind>:<name>" ("tool:stripe.refund", "model:gpt-4o").
	Ref string `json:"ref"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Name is the component's own name (the tool's name, the provider's
	// model id, the MCP server's name …).
	Name string `json:"name"`
	// Version is the component's version, where it has one.
	Version string `json:"version,omitempty"`
	// Provider is who provides it (a model's provider).
	Provider string `json:"provider,omitempty"`
	// Hash is "sha256:<hex>" of its definition: a tool's input schema
	// (its schemaSha), an MCP server's, model's, memory's or policy's
	// spec.
	Hash string `json:"hash,omitempty"`
	// Endpoint is where the agent reaches it, for services.
	Endpoint string `json:"endpoint,omitempty"`
	// Description says what it is.
	Description string `json:"description,omitempty"`
	// Properties are further facts, sorted by name (sideEffect,
	// schemaSha, requiresApproval, route …).
	Properties []Property `json:"properties,omitempty"`
}

// Property is one named fact about a component.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Dependency says that Ref uses each of DependsOn.
type Dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// Property returns the value of the named property and whether it is set.
func (c *Component) Property(name string) (string, bool) {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// AgentRef returns the Ref of the agent's own component.
func (b *BOM) AgentRef() string { return ref(KindAgent, b.Agent) }

// Component returns the component with ref, or nil.
func (b *BOM) Component(ref string) *Component {
	i, ok := slices.BinarySearchFunc(b.Components, ref, func(c Component, r string) int { return cmp.Compare(c.Ref, r) })
	if !ok {
		return nil
	}
	return &b.Components[i]
}

// normalize sorts components, properties and dependencies, and merges
// duplicate components (the first wins) and dependency lists.
func (b *BOM) normalize() {
	slices.SortStableFunc(b.Components, func(x, y Component) int { return cmp.Compare(x.Ref, y.Ref) })
	b.Components = slices.CompactFunc(b.Components, func(x, y Component) bool { return x.Ref == y.Ref })
	for i := range b.Components {
		slices.SortFunc(b.Components[i].Properties, func(x, y Property) int { return cmp.Compare(x.Name, y.Name) })
	}
	deps := map[string][]string{}
	for _, d := range b.Dependencies {
		deps[d.Ref] = append(deps[d.Ref], d.DependsOn...)
	}
	b.Dependencies = b.Dependencies[:0]
	for r, on := range deps {
		slices.Sort(on)
		b.Dependencies = append(b.Dependencies, Dependency{Ref: r, DependsOn: slices.Compact(on)})
	}
	slices.SortFunc(b.Dependencies, func(x, y Dependency) int { return cmp.Compare(x.Ref, y.Ref) })
}

func ref(kind, name string) string { return kind + ":" + name }

// serial returns a stable RFC 4122 UUID (version 5 layout, SHA-256 based)
// for the BOM's generation: the same across rewrites and revisions, and
// never naming the tenant.
func (b *BOM) serial() string {
	seed := b.ManifestUID
	if seed == "" {
		seed = b.Namespace + "/" + b.Manifest
	}
	sum := sha256.Sum256([]byte("warden.dev/agbom\x00" + seed))
	u := sum[:16]
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// hexOf returns the hex digest of a "sha256:<hex>" hash, or "" when h has
// another shape.
func hexOf(h string) string {
	const prefix = "sha256:"
	if len(h) != len(prefix)+64 || h[:len(prefix)] != prefix {
		return ""
	}
	if _, err := hex.DecodeString(h[len(prefix):]); err != nil {
		return ""
	}
	return h[len(prefix):]
}

// RefreshResult answers POST /v1/agbom/{agent}/refresh.
type RefreshResult struct {
	Namespace  string `json:"namespace"`
	Agent      string `json:"agent"`
	Generation int64  `json:"generation"`
	Manifest   string `json:"manifest"`
	Revision   int64  `json:"revision"`
	// Updated is true when the stored BOM changed (and AgBOMUpdated was
	// emitted).
	Updated bool `json:"updated"`
}
