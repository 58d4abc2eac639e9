// Package cli implements the warden command: `warden up` starts a local
// control plane, and kubectl-like commands (apply, validate, diff, get,
// describe, delete) talk to a control plane through app/client using the
// connection settings of app/clientconfig.
//
// Run builds a fresh cobra command tree for every call and writes only to
// the streams of the Env it is given, so tests run commands in-process and
// in parallel. Every failure maps onto a documented exit code (see
// docs/cli.md) that scripts can rely on.
package cli
