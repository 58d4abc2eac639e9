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
	// Neither the plaintext (data) nor the envelope-encrypted form
	// (sealed) ever leaves the server; readers see the key names.
	data, hasData := c.Spec["data"]
	sealed, hasSealed := c.Spec["sealed"]
	delete(c.Spec, "data")
	delete(c.Spec, "sealed")
	if !hasData && !hasSealed {
		return c
	}
	source := data
	if !hasData {
		source = sealed
	}
	var keys []string
	switch d := source.(type) {
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
