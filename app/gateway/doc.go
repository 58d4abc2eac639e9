// Package gateway is Warden's tool gateway: the one place every tool call
// of an agent passes.
//
// A call runs SPEC.md's nine steps in order, one file and one span each:
//
//	step1_resolve.go    resolve the Tool record by name
//	step2_authenticate.go  the agent, namespace and environment come from
//	                    the credential; the agent's compiled manifest must
//	                    list the tool
//	step3_classify.go   side-effect class and approval requirement
//	step4_policy.go     the Guardian: policy rules, external Guardian Agents,
//	                    force, rate limits and budgets
//	step5_record.go     the ToolCall record, its idempotency claim, usage
//	                    charges, events and, when approval is needed, the
//	                    Approval record, in one transaction
//	step6_trace.go      the trace event toolCallRequest
//	step7_invoke.go     the tool implementation (REST, OS sandbox, MCP)
//	step8_result.go     the result, the trace event toolCallResult
//	step9_output.go     redaction, injection scanning, truncation, modify
//
// The caller's credential is checked before step 1 (DESIGN.md), so an
// unauthenticated caller learns nothing about which tools exist.
//
// Configuration (tools, agents' compiled manifests, policies) is read from a
// per-tenant snapshot that Store.ListenConfig invalidates, so a call reads
// nothing from the database before it writes its record. Records are
// written through a group-commit recorder: concurrent calls share one
// transaction (under load the writer waits, at most 3 ms, for the writes of
// the calls in flight), and each caller returns only after its write is
// durable.
//
// Idempotency: the key is sha256(agent \x00 tool \x00 RFC 8785 JSON of the
// input) or the caller's Idempotency-Key header, claimed in the same
// transaction that creates the record, so one of any number of identical
// concurrent calls, on any number of replicas sharing the database, runs the
// tool; the others answer with that call and Idempotent-Replayed: true.
//
// Logs never carry arguments or results; they exist only in the ToolCall
// record.
package gateway
