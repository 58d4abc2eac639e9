package api

import "github.com/warden-dev/warden/app/resource"

// List is a page of resources of one kind, shaped like a Kubernetes list:
// kind "<Kind>List".
type List struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ListMeta           `json:"metadata"`
	Items      []*resource.Object `json:"items"`
}

// ListMeta carries the list's resourceVersion (a watch can resume from it)
// and the continue token of the next page ("" on the last page).
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion"`
	Continue        string `json:"continue,omitempty"`
}

// Watch event types.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	EventBookmark = "BOOKMARK"
	// EventError is never sent by the server: a client delivers it, with
	// Err set, when the stream breaks.
	EventError = "ERROR"
)

// WatchEvent is one line of the change feed. A BOOKMARK carries only
// metadata.resourceVersion in Object.
type WatchEvent struct {
	Type   string           `json:"type"`
	Object *resource.Object `json:"object"`
	// Err is set by a client on EventError only; never on the wire.
	Err error `json:"-"`
}
