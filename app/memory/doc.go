// Package memory is Warden's memory service (port 8084): agents and people
// write items into a Memory resource's store, query them back ranked by
// lexical relevance (BM25 over the items' tokens, computed in Go), delete
// them, and run summary passes that compact old items into one summary
// item, written by a model through the model router or, without a model,
// extractively.
//
// A request is authenticated like the tool gateway's (a workload token of
// audience warden:memory, or an API key), authorized only through
// app/authz (objects memoryitems and memoryitems/summarize), and audited
// like every API call. A workload may use only the Memory its compiled
// manifest names (spec.memories.working). Items are scoped per tenant,
// namespace and Memory, and per agent or per conversation as the Memory's
// spec.scope says; their text and metadata go through app/scan's PII
// redaction (spec.redactPII, default on) before they are stored. Writes
// emit MemoryWritten and queries MemoryRead. Items expire after their TTL
// (bounded by spec.ttl), and a Memory keeps at most spec.maxItems of them,
// dropping the oldest. docs/memory.md is the reference.
package memory
