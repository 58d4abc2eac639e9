package resource

import (
	"encoding/json"
	"fmt"
)

// API groups and versions. User-facing kinds use GroupVersion; the compiled
// manifest uses InternalGroupVersion.
const (
	Group                = "warden.dev"
	GroupVersion         = "warden.dev/v1alpha1"
	InternalGroup        = "internal.warden.dev"
	InternalGroupVersion = "internal.warden.dev/v1"
)

// Object is the envelope every resource shares. Spec and Status are kept as
// generic JSON objects so that storage, diff, merge patch and schema
// validation treat every kind alike; typed views are obtained with DecodeSpec.
type Object struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       map[string]any `json:"spec,omitempty"`
	Status     map[string]any `json:"status,omitempty"`
}

// ObjectMeta is the metadata of a resource, following Kubernetes API
// conventions. ResourceVersion is opaque to clients; Generation moves only
// when Spec changes.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
}

// Key identifies a resource inside a tenant.
type Key struct {
	Kind      string
	Namespace string
	Name      string
}

// String renders the key as kind/namespace/name for messages.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + "/" + k.Name
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// Key returns the object's key.
func (o *Object) Key() Key {
	return Key{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
}

// DeepCopy returns an independent copy of the object.
func (o *Object) DeepCopy() *Object {
	if o == nil {
		return nil
	}
	c := *o
	c.Metadata.Labels = copyStrings(o.Metadata.Labels)
	c.Metadata.Annotations = copyStrings(o.Metadata.Annotations)
	c.Spec = copyMap(o.Spec)
	c.Status = copyMap(o.Status)
	return &c
}

// DecodeSpec converts the object's generic spec into the typed struct T.
func DecodeSpec[T any](o *Object) (T, error) {
	var out T
	b, err := json.Marshal(o.Spec)
	if err != nil {
		return out, fmt.Errorf("encode %s spec: %w", o.Kind, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("decode %s spec: %w", o.Kind, err)
	}
	return out, nil
}

// ToMap converts any JSON-encodable value into a generic JSON object, as
// stored in Object.Spec and Object.Status.
func ToMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return m, nil
}

func copyStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = copyValue(v)
	}
	return c
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = copyValue(e)
		}
		return c
	default:
		return v
	}
}

// DecodeStatus converts the status of o into T.
func DecodeStatus[T any](o *Object) (T, error) {
	var out T
	if o.Status == nil {
		return out, nil
	}
	b, err := json.Marshal(o.Status)
	if err != nil {
		return out, fmt.Errorf("encode %s status: %w", o.Kind, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("decode %s status: %w", o.Kind, err)
	}
	return out, nil
}
