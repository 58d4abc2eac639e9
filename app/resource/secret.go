package resource

import "slices"

// RedactSecret returns a copy of o that is safe to return to a client: for
// a Secret, spec.data is replaced by spec.keys, the sorted key names (keys
// already present are kept when there is no data). Other kinds are returned
// as an unchanged copy. The API applies it on every read.
func RedactSecret(o *Object) *Object {
	c := o.DeepCopy()
	if c == nil || c.Kind != KindSecret || c.Spec == nil {
		return c
	}
	data, has := c.Spec["data"]
	if !has {
		return c
	}
	delete(c.Spec, "data")
	var keys []string
	switch d := data.(type) {
	case map[string]any:
		keys = sortedKeys(d)
	case map[string]string:
		keys = sortedKeys(d)
	}
	slices.Sort(keys)
	list := make([]any, len(keys))
	for i, k := range keys {
		list[i] = k
	}
	c.Spec["keys"] = list
	return c
}
