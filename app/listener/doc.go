// Package listener holds what every Warden listener shares so that no
// request can take the process down or hold a connection forever: a
// request id on every request and answer, panic recovery that turns a
// panic into a 500 Internal in the documented error shape (the stack goes
// to the log with the request id), and read-header, read and idle
// timeouts. Both Fiber applications (control plane, tool gateway) and the
// net/http servers (the sandbox's egress proxy, the demo tool) use it, as
// the Kubernetes apiserver wraps every handler chain in WithPanicRecovery.
package listener
