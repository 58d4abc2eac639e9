// Package compile turns an Agent and the resources it references into a
// CompiledAgentManifest: the deterministic, fully resolved configuration a
// worker runs from. It is the only place in Warden where references
// between resources are resolved and model capabilities are checked.
//
// Compile resolves one agent against a store.Reader. Reconcile is the
// apply pipeline's step after the versioned write: given the documents of
// one apply as they stand inside the still-open transaction, it finds every
// agent the apply affects, compiles each, runs policy preflight for every
// environment the agent is deployed to, and returns either the manifests
// to store and hand over, or diagnostics attributed to the applied
// documents that caused them (and then the transaction must roll back).
//
// Same inputs give byte-identical RFC 8785 JSON (see package jcs): nothing
// in a manifest depends on time, map order or list order of the store.
package compile
