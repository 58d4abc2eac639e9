package compile

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// fakeReader is a tiny in-memory store.Reader over a slice of objects. It
// measures the compiler, not storage: it hands out its own objects without
// copying (TestCompileDoesNotMutate holds the compiler to leaving them
// alone), and lists come back in slice order (so tests can shuffle it) two
// items a page, to exercise continue tokens.
type fakeReader struct {
	// MemberReader is never called by the compiler; embedding it keeps the
	// fake a store.Reader.
	store.MemberReader
	// GatewayReader likewise.
	store.GatewayReader
	store.RouterReader
	// RetentionReader likewise.
	store.RetentionReader
	// MemoryReader likewise.
	store.MemoryReader
	store.RAGReader
	objs  []*resource.Object
	gets  int
	lists int
}

const fakePage = 2

func (f *fakeReader) ResourceGet(_ context.Context, k resource.Key) (*resource.Object, error) {
	f.gets++
	for _, o := range f.objs {
		if o.Key() == k {
			return o, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) ResourceList(_ context.Context, p store.ListParams) (*store.ListResult, error) {
	f.lists++
	var match []*resource.Object
	for _, o := range f.objs {
		if o.Kind == p.Kind && (p.Namespace == "" || o.Metadata.Namespace == p.Namespace) {
			match = append(match, o)
		}
	}
	start := 0
	if p.Continue != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Continue, "page:"))
		if err != nil {
			return nil, store.ErrInvalidContinue
		}
		start = n
	}
	end := min(start+fakePage, len(match))
	res := &store.ListResult{Items: slices.Clone(match[start:end])}
	if end < len(match) {
		res.Continue = "page:" + strconv.Itoa(end)
	}
	return res, nil
}

func (f *fakeReader) EventList(context.Context, int64, int) ([]events.Event, error) { return nil, nil }

func (f *fakeReader) AuditList(context.Context, store.AuditListParams) ([]audit.Record, error) {
	return nil, nil
}

func (f *fakeReader) CurrentVersion(context.Context) (int64, error) { return 0, nil }
func (f *fakeReader) AuditHead(context.Context) (int64, error)      { return 0, nil }
