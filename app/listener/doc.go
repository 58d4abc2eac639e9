// Package listener holds what every Warden listener shares so that no
// request can take the process down or hold a connection forever: a
// request id on every request and answer, panic recovery that turns a
// panic into a 500 Internal in the documented error shape (the stack goes
// to the log with the request id), and read-header, read and idle
// timeouts. The Fiber applications (control plane, tool gateway, memory,
// RAG, trace query) use Recover, the net/http servers RecoverHTTP (the
// sandbox's egress proxy, the demo tool, OTLP/HTTP) or RecoverHTTPWith
// with their own error body (MCP gateway, model router), and gRPC servers
// (OTLP/gRPC) RecoverUnary and RecoverStream, as the Kubernetes apiserver
// wraps every handler chain in WithPanicRecovery. listenertest checks a
// listener against all of it.
package listener
