package agbom

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// fakeReader is an in-memory store.Reader over a slice of objects; lists
// come back two items a page, to exercise continue tokens.
type fakeReader struct {
	store.MemberReader
	store.GatewayReader
	store.RouterReader
	// RetentionReader likewise.
	store.RetentionReader
	store.MemoryReader
	store.RAGReader
	objs []*resource.Object
}

func (f *fakeReader) ResourceGet(_ context.Context, k resource.Key) (*resource.Object, error) {
	for _, o := range f.objs {
		if o.Key() == k {
			return o, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) ResourceList(_ context.Context, p store.ListParams) (*store.ListResult, error) {
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
	end := min(start+2, len(match))
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

// loadFixture decodes testdata/fleet.yaml as an apply would send it and
// stamps the objects as a store would, with fixed uids and times.
func loadFixture(t testing.TB) []*resource.Object {
	t.Helper()
	body, err := os.ReadFile("testdata/fleet.yaml")
	require.NoError(t, err)
	objs, err := resource.DecodeDocuments(body)
	require.NoError(t, err)
	for i, o := range objs {
		resource.Default(o)
		require.Empty(t, resource.Validate(o), "%s", o.Key())
		o.Metadata.Generation = 1
		o.Metadata.UID = "uid-" + o.Kind + "-" + o.Metadata.Name
		o.Metadata.ResourceVersion = strconv.Itoa(100 + i)
		o.Metadata.CreationTimestamp = "2026-01-02T03:04:05Z"
	}
	return objs
}

// compileManifest compiles the fixture's agent as apply would and stamps
// the manifest.
func compileManifest(t testing.TB, objs []*resource.Object, agent string) *resource.Object {
	t.Helper()
	var a *resource.Object
	for _, o := range objs {
		if o.Kind == resource.KindAgent && o.Metadata.Name == agent {
			a = o
		}
	}
	require.NotNil(t, a)
	c := compile.New(compile.Options{}.WithDefaults(), policy.NewEngine())
	m, errs, err := c.Compile(context.Background(), &fakeReader{objs: objs}, a)
	require.NoError(t, err)
	require.Empty(t, errs)
	m.Metadata.UID = "uid-manifest-" + m.Metadata.Name
	m.Metadata.CreationTimestamp = "2026-01-02T03:04:05Z"
	m.Metadata.Generation = 1
	return m
}

// testInfo is the Info of the golden files.
var testInfo = Info{WardenVersion: "0.9.0-test", CompiledAt: "2026-01-02T03:04:06Z"}

func fixtureBOM(t testing.TB) *BOM {
	t.Helper()
	objs := loadFixture(t)
	m := compileManifest(t, objs, "support-bot")
	b, err := Build(context.Background(), &fakeReader{objs: append(objs, m)}, m, testInfo)
	require.NoError(t, err)
	return b
}
