package secret

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// RotationStore is what RotateSecrets needs: the tenant directory and a
// read-write transaction per tenant. store.Store satisfies it once it
// embeds store.IdentityStore.
type RotationStore interface {
	TenantList(ctx context.Context) ([]store.TenantRecord, error)
	Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error
}

// RotationResult counts what RotateSecrets changed.
type RotationResult struct {
	Tenants int
	Secrets int
	Values  int
}

// RotateSecrets re-wraps every sealed value of every Secret of every tenant
// from a master key in oldK to the primary key of newK, one transaction
// per tenant. Values already wrapped by newK are skipped, so an interrupted
// rotation is finished by running it again with the same keys. Workload
// signing keys are not touched: see workload.Issuer, which replaces a
// signing key it can no longer decrypt.
func RotateSecrets(ctx context.Context, st RotationStore, oldK, newK *Keyring) (RotationResult, error) {
	var res RotationResult
	tenants, err := st.TenantList(ctx)
	if err != nil {
		return res, fmt.Errorf("rotate secrets: list tenants: %w", err)
	}
	for _, t := range tenants {
		var secrets, values int
		err := st.Update(ctx, t.ID, func(ctx context.Context, tx store.Tx) error {
			secrets, values = 0, 0
			var page []*resource.Object
			cont := ""
			for {
				l, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindSecret, Limit: store.MaxPageSize, Continue: cont})
				if err != nil {
					return fmt.Errorf("list secrets: %w", err)
				}
				page = append(page, l.Items...)
				if l.Continue == "" {
					break
				}
				cont = l.Continue
			}
			for _, o := range page {
				n, err := rewrapObject(oldK, newK, o)
				if err != nil {
					return fmt.Errorf("secret %s/%s: %w", o.Metadata.Namespace, o.Metadata.Name, err)
				}
				if n == 0 {
					continue
				}
				if _, err := tx.ResourceUpdate(ctx, o); err != nil {
					return fmt.Errorf("store secret %s/%s: %w", o.Metadata.Namespace, o.Metadata.Name, err)
				}
				secrets++
				values += n
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("rotate secrets of tenant %s: %w", t.ID, err)
		}
		res.Tenants++
		res.Secrets += secrets
		res.Values += values
	}
	return res, nil
}

// rewrapObject re-wraps the sealed values of o in place and returns how
// many changed.
func rewrapObject(oldK, newK *Keyring, o *resource.Object) (int, error) {
	sealed, _ := o.Spec[FieldSealed].(map[string]any)
	n := 0
	for key, v := range sealed {
		s, ok := v.(string)
		if !ok {
			return 0, fmt.Errorf("key %q: %w: not a string", key, ErrMalformed)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return 0, fmt.Errorf("key %q: %w: not base64", key, ErrMalformed)
		}
		out, err := Rewrap(oldK, newK, raw)
		if err != nil {
			return 0, fmt.Errorf("key %q: %w", key, err)
		}
		if string(out) != string(raw) {
			sealed[key] = base64.StdEncoding.EncodeToString(out)
			n++
		}
	}
	return n, nil
}
