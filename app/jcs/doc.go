// Package jcs implements the JSON Canonicalization Scheme of RFC 8785: one
// byte-exact serialization of a JSON value, with object members sorted by
// their UTF-16 code units, numbers printed as ECMAScript prints IEEE 754
// doubles and strings escaped minimally.
//
// Warden hashes canonical JSON wherever two parties must agree on the bytes
// of a value without agreeing on a serializer: the schemaSha of a tool's
// input schema in a compiled manifest, the byte-identical manifests the
// compiler promises, and the idempotency key of a tool call.
package jcs
