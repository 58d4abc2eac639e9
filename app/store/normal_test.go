package store

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

// roundTrip is what jsonCopy did before normalObject: the reference.
func roundTrip(t *testing.T, o *resource.Object) (*resource.Object, error) {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var out resource.Object
	require.NoError(t, json.Unmarshal(b, &out))
	normalize(&out)
	return &out, nil
}

func marshalEqual(a, b any) bool {
	ab, errA := json.Marshal(a)
	bb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ab, bb)
}

type point struct{ X int }

var normalValues = map[string]any{
	"nil":               nil,
	"bool":              true,
	"string":            "héllo <b>&</b> \u2028",
	"invalid utf-8":     "a\xffb",
	"float":             1.5,
	"negative zero":     math.Copysign(0, -1),
	"zero":              0.0,
	"nan":               math.NaN(),
	"inf":               math.Inf(1),
	"int":               42,
	"int64 beyond 2^53": int64(1<<60 + 1),
	"uint64 max":        uint64(math.MaxUint64),
	"int32":             int32(-7),
	"float32":           float32(0.1),
	"struct":            point{X: 1},
	"nil map":           map[string]any(nil),
	"empty map":         map[string]any{},
	"nil slice":         []any(nil),
	"empty slice":       []any{},
	"nested":            map[string]any{"a": []any{1, "x", map[string]any{"b": nil, "c": map[string]any(nil)}}, "d": []string{"p", "q"}},
	"strings map":       map[string]string{"k": "v"},
	"nil strings":       []string(nil),
	"bad key":           map[string]any{"\xfe": 1},
	"json number":       json.Number("12"),
}

// fallsBack are the values normalObject leaves to the round trip.
var fallsBack = map[string]bool{"invalid utf-8": true, "nan": true, "inf": true, "float32": true, "struct": true, "bad key": true, "json number": true}

func TestNormalObjectMatchesTheJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for name, v := range normalValues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := &resource.Object{
				APIVersion: resource.GroupVersion, Kind: "ToolCall",
				Metadata: resource.ObjectMeta{Name: "tc-1", Namespace: "default", Labels: map[string]string{"a": "b"}},
				Spec:     map[string]any{"input": map[string]any{"v": v}},
				Status:   map[string]any{"output": v},
			}
			want, wantErr := roundTrip(t, o)
			got, ok := normalObject(o)
			require.Equal(t, !fallsBack[name], ok, "normalObject decided")
			if !ok {
				return // jsonCopy takes the round trip
			}
			require.NoError(t, wantErr, "normalObject accepted what JSON cannot encode")
			require.Equal(t, want, got)
			// The copy is independent of the original.
			got.Spec["input"].(map[string]any)["v"] = "changed"
			require.NotEqual(t, "changed", o.Spec["input"].(map[string]any)["v"])
		})
	}
}

func TestNormalObjectFallsBack(t *testing.T) {
	t.Parallel()
	for name := range fallsBack {
		_, ok := normalObject(&resource.Object{Kind: "X", Spec: map[string]any{"v": normalValues[name]}})
		require.False(t, ok, name)
	}
	_, ok := normalObject(&resource.Object{Kind: "X", Metadata: resource.ObjectMeta{Name: "a\xff"}})
	require.False(t, ok)
	_, ok = normalObject(&resource.Object{Kind: "X", Metadata: resource.ObjectMeta{Labels: map[string]string{"k": "\xff"}}})
	require.False(t, ok)
}

func TestNormalEqualMatchesTheEncoding(t *testing.T) {
	t.Parallel()
	decoded := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return v
		}
		var out any
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}
	var values []any
	for _, v := range normalValues {
		values = append(values, v, decoded(v))
	}
	values = append(values,
		map[string]any{"a": 1.0, "b": "x"}, map[string]any{"a": 1.0, "b": "y"}, map[string]any{"a": 1.0},
		map[string]any{"a": 1.0, "c": "x"}, []any{1.0, 2.0}, []any{2.0, 1.0}, []any{1.0})
	for i, a := range values {
		for j, b := range values {
			eq, ok := normalEqual(a, b)
			if !ok {
				continue
			}
			require.Equal(t, marshalEqual(a, b), eq, "values %d (%#v) and %d (%#v)", i, a, j, b)
			require.Equal(t, marshalEqual(a, b), jsonEqual(a, b))
		}
	}
	// Anything else is decided by the encoding.
	require.True(t, jsonEqual[any](point{X: 1}, point{X: 1}))
	require.False(t, jsonEqual[any](math.NaN(), math.NaN()))
	_, ok := normalEqual(map[string]any{"v": float32(1)}, map[string]any{"v": float32(1)})
	require.False(t, ok)
}
