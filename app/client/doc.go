// Package client is the typed Go client of Warden's control plane API. The
// warden CLI is built on it, and SDKs and tests use it to apply, read,
// patch, delete and watch resources. Its request and answer types are
// app/api's, the very types the server encodes; resources are
// resource.Object.
//
// Every method takes a context first and talks to one server with one bearer
// token. Failures come back as one of three shapes: *APIError when the
// server answered with the documented error body (use apierr.As to reach the
// *apierr.Error inside, or StatusCode for the HTTP status), an error wrapping
// ErrUnreachable when no connection could be made, or the context's error
// when the caller gave up.
package client
