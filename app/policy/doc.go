// Package policy is Warden's built-in Guardian: it evaluates the CEL rules
// of Policy resources at the four hooks (preflight at apply time,
// toolCallRequest and toolCallResult in the tool gateway, modelCall in the
// model router) and returns one Decision.
//
// An Engine owns the CEL environment and a cache of compiled policies keyed
// by the policy's identity and resourceVersion, so a rule's expression is
// compiled once per policy version and never per evaluation. Engine.Build
// turns a list of Policy objects into an immutable Set, reusing every
// compiled policy that did not change; a Set is safe for concurrent use.
//
// Evaluation is deterministic (policies by name, then namespace; rules in
// order) and the most restrictive decision wins: deny > require_approval >
// modify > allow. A rule that fails at run time counts as a deny, so policy
// bugs fail closed.
//
// Variables a rule's `when` may read, by hook (CheckPolicy rejects a rule
// that reads a variable its hooks never fill):
//
//	all hooks        hook, ns (the agent's namespace), environment, agent
//	preflight        kind, object, models ([]"<provider>:<model>"), tools ([]{name, sideEffect})
//	toolCallRequest  tool ({name, sideEffect}), input (the arguments)
//	toolCallResult   tool, input, output (the result)
//	modelCall        model ("<provider>:<model>"), input (the request)
//
// docs/resources.md calls the namespace variable `namespace`, but that
// word is reserved in CEL and cannot be an identifier, hence `ns`.
package policy
