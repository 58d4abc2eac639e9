// Package agbom builds the bill of materials of each compiled agent (an
// AgBOM): the agent and its framework adapter, its models, tools, MCP
// servers, memories and policies, with versions, hashes and the
// dependencies between them, and the Warden version that compiled it.
//
// Build turns one CompiledAgentManifest and the resources it names into a
// format-neutral BOM; CycloneDX 1.6, SPDX 2.3 and SWID (ISO/IEC 19770-2)
// are renderings of that BOM (Render). Service keeps the BOM of every
// manifest in the manifest's status (status.agbom), regenerates it when a
// River job reports AgentCompiled or a caller asks for a refresh, emits
// AgBOMUpdated when it changed, and diffs the BOMs of two generations.
//
// Everything is deterministic: the same manifest, resources, compile time
// and Warden version give byte-identical documents; no clock is read.
// docs/agbom.md describes the mapping onto each format and the decisions.
package agbom
