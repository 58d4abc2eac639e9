// Package execution runs agents on the control plane: an Execution is one
// run of an Agent's compiled manifest with an input, in one environment.
//
// Create records the Execution (phase Pending, event ExecutionCreated),
// schedules it as a durable job (Scheduled, ExecutionScheduled) and the
// job's Run drives the built-in agent loop: it calls the model router's
// OpenAI-compatible chat completions endpoint with the manifest's tools as
// function tools and sends every tool call the model asks for through the
// tool gateway (POST /v1/tool-calls, execution set), feeding results back
// until the model answers or the step limit is reached. A call that
// awaits approval pauses the execution (phase Waiting) until it is decided.
// Both services are reached over HTTP with workload tokens the service
// issues for the agent, exactly as an agent's own runtime would.
//
// Phases: Pending → Scheduled → Running ⇄ Waiting → Succeeded | Failed |
// Cancelled. A run survives a restart: its job is retried and the loop
// starts again from the input; the gateway's idempotency returns the
// recorded result of every tool call already made, so no side effect
// repeats. Replay re-sends the recorded tool calls through the gateway
// (deduplicated, or forced where policy allows), and Promote moves an
// agent's Deployment to the next environment through the apply pipeline,
// so that policy preflight applies. Events go to the store's event log
// and the in-process bus; Events reads an execution's log (docs/executions.md).
package execution
