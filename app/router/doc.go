// Package router is Warden's model router (port 8083): every model call of
// an agent passes through it, so that each one is governed (the caller's
// route, per-environment policy, budgets), traced, recorded and explained.
//
// Callers speak the OpenAI Chat Completions wire format, on SPEC.md's
// paths (POST /v1/model/respond, POST /v1/model/stream) and on the drop-in
// paths that the OpenAI SDKs use (POST /v1/chat/completions, GET
// /v1/models, POST /v1/embeddings); POST /v1/messages speaks Anthropic's
// Messages format. The router picks the Models to try from the caller's
// compiled manifest (spec.modelRoute: primary, then fallbacks) or from the
// Model the request names, skips each candidate that lacks a capability
// the request needs, that a policy denies in the caller's environment or
// that a budget has exhausted, and calls the first that remains; a
// provider that answers 429, 5xx, times out or refuses the connection
// makes it switch to the next (ProviderSwitched), a 4xx that is the
// caller's fault does not.
//
// Providers: OpenAI and any OpenAI-compatible server (request and answer
// forwarded as they are, the model id replaced), Azure OpenAI by its URL
// form, and Anthropic's Messages API (messages, tools and streaming
// translated both ways). API keys are Secret references that the secret
// broker resolves here; the caller never sees them.
//
// Every decision (the candidates in order, what became of each and why) is
// written, with the ModelCallStarted, ModelCallCompleted and
// ProviderSwitched events and the usage charges, by a group-commit
// recorder off the request path (recorder.go, docs/router.md), so that GET
// /v1/route/{name}/explain?execution= reads back exactly what was decided.
package router
