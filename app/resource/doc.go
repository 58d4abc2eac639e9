// Package resource defines Warden's declarative resource model: the generic
// Object envelope (apiVersion, kind, metadata, spec, status) that every kind
// shares, the catalog of kinds with their API paths, and per-kind defaulting
// and validation. Everything that stores, applies, compiles or serves
// resources speaks in terms of this package.
package resource
