// Package adapter is the last step of the apply pipeline: it hands each
// newly compiled CompiledAgentManifest to the runtime adapter that runs
// the agent (DESIGN.md: "hand-over to the runtime adapter"). A Registry
// holds the adapters by name; Local is the adapter of `warden up`, which
// for now records each hand-over. Executions arrive in a later issue.
package adapter
