package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-dev/warden/app/resource"
)

// ManifestNotFoundError says why an agent has no manifest to check a
// request against: the agent does not exist, or it was never compiled.
// It wraps ErrNotFound.
type ManifestNotFoundError struct {
	// Reason is a sentence for the caller, naming the agent.
	Reason string
}

func (e *ManifestNotFoundError) Error() string { return e.Reason }

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *ManifestNotFoundError) Unwrap() error { return ErrNotFound }

// AgentManifest reads the newest CompiledAgentManifest of agent ns/name
// (the Agent's status.compiledManifest) and decodes its spec. The data
// plane services check a workload's request against it: an agent may use
// what its manifest names. A missing agent or manifest is a
// *ManifestNotFoundError.
func AgentManifest(ctx context.Context, r Reader, ns, agent string) (string, resource.CompiledAgentManifestSpec, error) {
	var spec resource.CompiledAgentManifestSpec
	a, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: ns, Name: agent})
	if errors.Is(err, ErrNotFound) {
		return "", spec, &ManifestNotFoundError{Reason: fmt.Sprintf("agent %q does not exist in namespace %q", agent, ns)}
	}
	if err != nil {
		return "", spec, fmt.Errorf("read agent %s/%s: %w", ns, agent, err)
	}
	name, _ := a.Status["compiledManifest"].(string)
	if name == "" {
		return "", spec, &ManifestNotFoundError{Reason: fmt.Sprintf("agent %q has no compiled manifest yet: apply it and check `warden describe agent %s`", agent, agent)}
	}
	m, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindCompiledAgentManifest, Namespace: ns, Name: name})
	if errors.Is(err, ErrNotFound) {
		return "", spec, &ManifestNotFoundError{Reason: fmt.Sprintf("agent %q has no compiled manifest yet", agent)}
	}
	if err != nil {
		return "", spec, fmt.Errorf("read manifest %s/%s: %w", ns, name, err)
	}
	spec, err = resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
	if err != nil {
		return "", spec, fmt.Errorf("decode manifest %s/%s: %w", ns, name, err)
	}
	return name, spec, nil
}
