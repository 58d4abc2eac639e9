package resource

// Default fills the defaults of o's kind in place (spec fields, and the
// namespace "default" for namespaced kinds that name none).
// PLACEHOLDER: implemented by the resource-kinds work.
func Default(o *Object) {}

// Validate checks o against its kind's JSON Schema and rules (apiVersion,
// names, DNS-1123, tool names <system>.<action>) and returns every field
// error at once; nil when valid. It does not resolve references to other
// resources: that is the compiler's job.
// PLACEHOLDER: implemented by the resource-kinds work.
func Validate(o *Object) FieldErrors { return nil }
