package secret

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// A stored Secret never holds plaintext. Apply hands SealSecret the
// document it admitted, whose spec.data holds the values; SealSecret
// replaces spec.data by
//
//	spec.sealed: {<key>: <base64 of the sealed value>}
//	spec.keys:   [<sorted key names>]
//
// before the store write. Each sealed value is bound to tenant, namespace,
// Secret name and key (SecretContext), so copying it anywhere else makes it
// undecryptable.

// Spec fields of a stored Secret.
const (
	FieldData   = "data"
	FieldSealed = "sealed"
	FieldKeys   = "keys"
)

// SealSecret seals the spec.data of a Secret document in place for tenant
// (see the format above). Documents of other kinds are left alone. A
// document without spec.data is left as it is.
func SealSecret(k *Keyring, tenant string, o *resource.Object) error {
	return SealSecretUpdate(k, tenant, o, nil)
}

// SealSecretUpdate is SealSecret for a document that replaces current (the
// stored Secret of the same name, or nil). A value equal to the stored one
// keeps its stored ciphertext, so re-applying an unchanged Secret is
// "unchanged" instead of a new generation with fresh random ciphertext.
// When o has no spec.data at all (a read-back re-applied), the stored
// sealed values are kept.
func SealSecretUpdate(k *Keyring, tenant string, o, current *resource.Object) error {
	if o == nil || o.Kind != resource.KindSecret {
		return nil
	}
	if o.Spec == nil {
		o.Spec = map[string]any{}
	}
	var old map[string]any
	if current != nil && current.Spec != nil {
		old, _ = current.Spec[FieldSealed].(map[string]any)
	}
	raw, hasData := o.Spec[FieldData]
	if !hasData {
		if _, hasSealed := o.Spec[FieldSealed]; !hasSealed && old != nil {
			o.Spec[FieldSealed] = copyStringMap(old)
			o.Spec[FieldKeys] = keyList(old)
		}
		return nil
	}
	data, err := stringMap(raw)
	if err != nil {
		return err
	}
	sealed := make(map[string]any, len(data))
	for key, value := range data {
		ctx := SecretContext(tenant, o.Metadata.Namespace, o.Metadata.Name, key)
		if prev, ok := old[key].(string); ok && sameValue(k, prev, value, ctx) {
			sealed[key] = prev
			continue
		}
		b, err := k.Seal([]byte(value), ctx)
		if err != nil {
			return fmt.Errorf("seal secret %s/%s key %q: %w", o.Metadata.Namespace, o.Metadata.Name, key, err)
		}
		sealed[key] = base64.StdEncoding.EncodeToString(b)
	}
	delete(o.Spec, FieldData)
	o.Spec[FieldSealed] = sealed
	o.Spec[FieldKeys] = keyList(sealed)
	return nil
}

// sameValue reports whether the stored sealed value opens to value.
func sameValue(k *Keyring, sealed, value string, ctx []byte) bool {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return false
	}
	pt, err := k.Open(b, ctx)
	if err != nil {
		return false
	}
	defer clear(pt)
	return subtle.ConstantTimeCompare(pt, []byte(value)) == 1
}

func stringMap(raw any) (map[string]string, error) {
	switch d := raw.(type) {
	case map[string]string:
		return d, nil
	case map[string]any:
		out := make(map[string]string, len(d))
		for key, v := range d {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("spec.data.%s: value must be a string", key)
			}
			out[key] = s
		}
		return out, nil
	case nil:
		return map[string]string{}, nil
	}
	return nil, errors.New("spec.data must be a map of strings")
}

func copyStringMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func keyList(m map[string]any) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

// Broker turns stored Secret values back into plaintext at the gateway and
// model-router boundary. It is the only place in Warden that does.
type Broker struct {
	keyring *Keyring
}

// NewBroker returns a broker opening values with keyring.
func NewBroker(keyring *Keyring) *Broker { return &Broker{keyring: keyring} }

// Resolve returns the plaintext of key in the Secret ns/name of tenant,
// read through reader (a transaction of that tenant). Errors name the
// Secret and key, never the value; a missing Secret or key wraps
// ErrNotFound.
func (b *Broker) Resolve(ctx context.Context, reader store.Reader, tenant, ns, name, key string) (string, error) {
	o, err := reader.ResourceGet(ctx, resource.Key{Kind: resource.KindSecret, Namespace: ns, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: secret %s/%s", ErrNotFound, ns, name)
	}
	if err != nil {
		return "", fmt.Errorf("read secret %s/%s: %w", ns, name, err)
	}
	sealed, _ := o.Spec[FieldSealed].(map[string]any)
	s, ok := sealed[key].(string)
	if !ok {
		return "", fmt.Errorf("%w: secret %s/%s has no key %q", ErrNotFound, ns, name, key)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("secret %s/%s key %q: %w: not base64", ns, name, key, ErrMalformed)
	}
	pt, err := b.keyring.Open(raw, SecretContext(tenant, ns, name, key))
	if err != nil {
		return "", fmt.Errorf("secret %s/%s key %q: %w", ns, name, key, err)
	}
	return string(pt), nil
}

// OpenSecretData returns the plaintext values of a stored Secret of
// tenant, by key, so that a merge patch of spec.data can be applied to
// them and sealed again (unchanged values keep their ciphertext). Errors
// name the Secret and key, never a value.
func OpenSecretData(k *Keyring, tenant string, o *resource.Object) (map[string]any, error) {
	sealed, _ := o.Spec[FieldSealed].(map[string]any)
	data := make(map[string]any, len(sealed))
	for key, v := range sealed {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("secret %s/%s key %q: %w: not a string", o.Metadata.Namespace, o.Metadata.Name, key, ErrMalformed)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s key %q: %w: not base64", o.Metadata.Namespace, o.Metadata.Name, key, ErrMalformed)
		}
		pt, err := k.Open(raw, SecretContext(tenant, o.Metadata.Namespace, o.Metadata.Name, key))
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s key %q: %w", o.Metadata.Namespace, o.Metadata.Name, key, err)
		}
		data[key] = string(pt)
	}
	return data, nil
}
