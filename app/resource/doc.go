// Package resource defines Warden's declarative resource model: the generic
// Object envelope (apiVersion, kind, metadata, spec, status) that every kind
// shares, the catalog of kinds with their API paths, and per-kind defaulting
// and validation. Everything that stores, applies, compiles or serves
// resources speaks in terms of this package.
//
// The files follow the life of a document in an apply:
//
//   - decode.go: DecodeDocuments splits a YAML or JSON body into Objects.
//   - default.go: Default fills the defaults of docs/resources.md.
//   - validate.go: Validate returns every FieldError at once: names, labels,
//     the kind's JSON Schema (schema.go, schemas/*.json) and the rules a
//     schema cannot express. References to other resources are not
//     resolved here; that is the compiler's job.
//   - diff.go: Diff compares two versions field by field for `warden diff`.
//   - secret.go: RedactSecret hides Secret values on every read.
//   - types.go: typed views of each kind's spec, obtained with DecodeSpec.
//
// The JSON Schemas are the published contract (docs/schemas is a copy kept
// equal by TestPublishedSchemas); docs/resources.md describes every field.
package resource
