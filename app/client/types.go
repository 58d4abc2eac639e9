package client

import "github.com/warden-dev/warden/app/resource"

// Actions reported by apply and diff.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"

	DiffCreate    = "create"
	DiffUpdate    = "update"
	DiffUnchanged = "unchanged"
)

// ApplyResult is the answer of POST /v1/resources/apply.
type ApplyResult struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []ApplyItem `json:"items"`
	// Manifests names the CompiledAgentManifests the apply produced,
	// e.g. "support-bot-g1".
	Manifests []string `json:"manifests,omitempty"`
}

// ApplyItem is the outcome of one document of an apply, in body order.
type ApplyItem struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Action is ActionCreated, ActionConfigured or ActionUnchanged.
	Action          string `json:"action"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Generation      int64  `json:"generation,omitempty"`
}

// ValidationResult is the answer of POST /v1/resources/validate when the
// body is valid; an invalid body answers 422 AdmissionRejected instead.
type ValidationResult struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Valid      bool      `json:"valid"`
	Items      []ItemRef `json:"items"`
}

// ItemRef names one resource of a body.
type ItemRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
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
	Action  string   `json:"action"`
	Changes []Change `json:"changes,omitempty"`
}

// Change is one field that differs. Old is absent for "add" and New is
// absent for "remove".
type Change struct {
	// Path is the field path, e.g. "spec.tools[1].name".
	Path string `json:"path"`
	// Op is "add", "remove" or "replace".
	Op  string `json:"op"`
	Old any    `json:"old,omitempty"`
	New any    `json:"new,omitempty"`
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

// ListOptions selects and pages a list.
type ListOptions struct {
	// Selector is a label selector in Kubernetes syntax (see
	// resource.ParseSelector); sent as labelSelector.
	Selector string
	// FieldSelector filters on fields such as spec.provider=openai.
	FieldSelector string
	// Limit is the page size; 0 lets the server choose (100).
	Limit int
	// Continue is the opaque token of the previous page.
	Continue string
}

// List is a page of resources of one kind, shaped like a Kubernetes list.
type List struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ListMeta           `json:"metadata"`
	Items      []*resource.Object `json:"items"`
}

// ListMeta carries the list's resourceVersion (a watch can resume from it)
// and the continue token of the next page ("" on the last page).
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Continue        string `json:"continue,omitempty"`
}

// Watch event types.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	EventBookmark = "BOOKMARK"
	// EventError is never sent by the server: the client delivers it, with
	// Err set, when the stream breaks.
	EventError = "ERROR"
)

// WatchEvent is one line of the change feed. A BOOKMARK carries only
// metadata.resourceVersion in Object.
type WatchEvent struct {
	Type   string           `json:"type"`
	Object *resource.Object `json:"object,omitempty"`
	// Err is set on EventError only.
	Err error `json:"-"`
}
