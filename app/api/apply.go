package api

import "github.com/warden-dev/warden/app/resource"

// Actions reported by apply.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
)

// Actions reported by diff.
const (
	DiffCreate    = "create"
	DiffUpdate    = "update"
	DiffUnchanged = "unchanged"
)

// ApplyResult is the answer of POST /v1/resources/apply.
type ApplyResult struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []ApplyItem `json:"items"`
	// Manifests names the CompiledAgentManifests the apply wrote or
	// refreshed, e.g. "support-bot-g1".
	Manifests []string `json:"manifests"`
}

// ApplyItem is the outcome of one document of an apply (or validation),
// in body order.
type ApplyItem struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Action is ActionCreated, ActionConfigured or ActionUnchanged; empty
	// in a validation.
	Action          string `json:"action,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Generation      int64  `json:"generation,omitempty"`
}

// ValidationResult is the answer of POST /v1/resources/validate when the
// body is valid; an invalid body answers 422 AdmissionRejected instead.
type ValidationResult struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Valid      bool        `json:"valid"`
	Items      []ApplyItem `json:"items"`
}

// DiffResult is the answer of POST /v1/resources/diff.
type DiffResult struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Items      []DiffItem `json:"items"`
}

// DiffItem is the structural difference between one document and the
// stored resource of the same key.
type DiffItem struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Action is DiffCreate, DiffUpdate or DiffUnchanged.
	Action  string                 `json:"action"`
	Changes []resource.FieldChange `json:"changes"`
}

// Changed reports whether applying the body would change anything.
func (d *DiffResult) Changed() bool {
	for _, it := range d.Items {
		if it.Action != DiffUnchanged {
			return true
		}
	}
	return false
}

// Diagnostic is one reason an apply, validation or diff is rejected,
// attributed to a document of the body (error.details.diagnostics[] of
// an AdmissionRejected answer).
type Diagnostic struct {
	// Document is the zero-based index of the document in the body.
	Document int `json:"document"`
	// Kind is the kind of that document.
	Kind string `json:"kind"`
	// Namespace is the namespace of that document.
	Namespace string `json:"namespace"`
	// Name is the name of that document.
	Name string `json:"name"`
	// Path is the offending field of that document, e.g. "spec.tools[3].name".
	Path string `json:"path"`
	// Code is a field error code: NotFound, Forbidden, Invalid, PolicyDenied, ….
	Code string `json:"code"`
	// Message says what is wrong in words a person can act on.
	Message string `json:"message"`
	// Policy is "<policy>@<version>" for PolicyDenied.
	Policy string `json:"policy,omitempty"`
}
