package compile

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// resolver reads referenced resources through a store.Reader, remembering
// what it read so that one Reconcile reads each resource and each list
// once however many agents share it.
type resolver struct {
	r     store.Reader
	objs  map[resource.Key]*resource.Object // nil value: known missing
	lists map[resource.Key][]*resource.Object
}

func newResolver(r store.Reader) *resolver {
	return &resolver{r: r, objs: map[resource.Key]*resource.Object{}, lists: map[resource.Key][]*resource.Object{}}
}

// get returns the resource, nil when it does not exist, or a store error.
func (res *resolver) get(ctx context.Context, kind, namespace, name string) (*resource.Object, error) {
	k := resource.Key{Kind: kind, Namespace: namespace, Name: name}
	if o, ok := res.objs[k]; ok {
		return o, nil
	}
	o, err := res.r.ResourceGet(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		res.objs[k] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
	res.objs[k] = o
	return o, nil
}

// list returns every resource of kind in namespace ("" = all namespaces
// of the tenant), paging through continue tokens.
func (res *resolver) list(ctx context.Context, kind, namespace string) ([]*resource.Object, error) {
	k := resource.Key{Kind: kind, Namespace: namespace}
	if l, ok := res.lists[k]; ok {
		return l, nil
	}
	var out []*resource.Object
	params := store.ListParams{Kind: kind, Namespace: namespace, Limit: store.MaxPageSize}
	for {
		page, err := res.r.ResourceList(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("list %s in namespace %q: %w", kind, namespace, err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			break
		}
		params.Continue = page.Continue
	}
	res.lists[k] = out
	return out, nil
}
