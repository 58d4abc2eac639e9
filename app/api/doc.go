// Package api declares the wire types of Warden's HTTP API once, for both
// sides: the control plane and gateway encode them, the Go client
// (app/client) and the CLI decode them, as k8s.io/api is shared by
// client-go and the apiserver. Resources themselves are resource.Object;
// error bodies are apierr.Body. Nothing here does I/O.
package api
