package store

import (
	"context"
	"fmt"

	"github.com/warden-dev/warden/app/resource"
)

// Position is a point in the (namespace, name) order of a list.
type Position struct {
	Namespace string
	Name      string
}

// ScanFunc reads at most n resources of the list's kind (and namespace
// filter, when set), ordered by (namespace, name) in byte order and strictly
// after the position when after is non-nil. Drivers implement it with one
// SQL query; ListPage does the rest.
type ScanFunc func(ctx context.Context, after *Position, n int) ([]*resource.Object, error)

// Scan sizes while a selector filters rows in Go: the first scan reads at
// least minSelectorBatch rows, each further scan of the same page twice as
// many, up to maxSelectorBatch, so dense matches cost little and sparse ones
// need few queries.
const (
	minSelectorBatch = 32
	maxSelectorBatch = 1024
)

// ListPage runs the paging algorithm every driver shares: it checks the
// continue token, scans rows with scan, applies the selector in Go and keeps
// scanning until the page is full or the rows run out. The returned continue
// token is empty exactly when no further item matches. key is the driver's
// HMAC key and tenant binds the token to the tenant.
func ListPage(ctx context.Context, key []byte, tenant string, p ListParams, scan ScanFunc) ([]*resource.Object, string, error) {
	if p.Kind == "" {
		return nil, "", fmt.Errorf("list: kind is required")
	}
	limit := PageLimit(p.Limit)
	sel := ""
	if !p.Selector.Empty() {
		sel = p.Selector.String()
	}
	var pos *Position
	if p.Continue != "" {
		tok, err := DecodeContinue(key, tenant, p.Continue)
		if err != nil {
			return nil, "", err
		}
		if tok.Kind != p.Kind || tok.Namespace != p.Namespace || tok.Selector != sel {
			return nil, "", fmt.Errorf("continue token was issued for another query: %w", ErrInvalidContinue)
		}
		pos = &Position{Namespace: tok.LastNamespace, Name: tok.LastName}
	}
	batch := limit + 1
	if sel != "" {
		batch = max(batch, minSelectorBatch)
	}
	items := make([]*resource.Object, 0, limit)
	for {
		rows, err := scan(ctx, pos, batch)
		if err != nil {
			return nil, "", err
		}
		for _, o := range rows {
			if !p.Selector.Matches(o) {
				continue
			}
			if len(items) == limit {
				// One more match exists: the page is full and not the last.
				last := items[limit-1]
				tok := EncodeContinue(key, tenant, ContinueToken{
					Kind:          p.Kind,
					Namespace:     p.Namespace,
					Selector:      sel,
					LastNamespace: last.Metadata.Namespace,
					LastName:      last.Metadata.Name,
				})
				return items, tok, nil
			}
			items = append(items, o)
		}
		if len(rows) < batch {
			return items, "", nil
		}
		last := rows[len(rows)-1]
		pos = &Position{Namespace: last.Metadata.Namespace, Name: last.Metadata.Name}
		batch = max(batch, min(batch*2, maxSelectorBatch))
	}
}

// ListAll reads every resource of kind in r's tenant that sel matches (nil
// matches all), page by page.
func ListAll(ctx context.Context, r Reader, kind string, sel *resource.Selector) ([]*resource.Object, error) {
	var out []*resource.Object
	p := ListParams{Kind: kind, Selector: sel, Limit: MaxPageSize}
	for {
		res, err := r.ResourceList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", kind, err)
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, nil
		}
		p.Continue = res.Continue
	}
}
