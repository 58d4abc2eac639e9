package resource

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeCases are values whose encoding Marshal must reproduce exactly.
var encodeCases = map[string]any{
	"null":           nil,
	"bool":           false,
	"plain string":   "hello",
	"escapes":        "quote \" backslash \\ newline \n tab \t cr \r bs \b ff \f nul \x00 unit \x1f del \x7f",
	"html":           "<script>a && b</script>",
	"line separator": "a\u2028b\u2029c",
	"invalid utf-8":  "a\xffb\xc3",
	"non-ascii":      "héllo 世界 😀",
	"integers":       []any{0.0, 1.0, -1.0, 42.0, 1e20, 9007199254740993.0},
	"fractions":      []any{0.5, -0.25, 3.14159, 1e-6, 1e-7, 1.5e-9, 1e21, 1.7976931348623157e308, 5e-324},
	"negative zero":  math.Copysign(0, -1),
	"go ints":        []any{1, int64(-9), int64(math.MaxInt64)},
	"nested": map[string]any{"b": []any{map[string]any{"z": 1.0, "a": nil}}, "a": map[string]any{},
		"c": []any{}, "d": map[string]any(nil), "e": []any(nil), "f": map[string]string{"y": "1", "x": "<"}},
	"key order": map[string]any{"b": 1.0, "a": 2.0, "B": 3.0, "é": 4.0, "": 5.0, "a\u2028": 6.0},
}

func TestMarshalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for name, v := range encodeCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(v)
			require.NoError(t, err)
			got, err := MarshalValue(v)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))

			o := &Object{APIVersion: GroupVersion, Kind: "Tool<x>",
				Metadata: ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{"b": "2", "a": "1"},
					Annotations: map[string]string{"note": "a&b"}, UID: "u", ResourceVersion: "7", Generation: 3,
					CreationTimestamp: "2030-01-02T03:04:05Z"},
				Spec: map[string]any{"v": v}, Status: map[string]any{"phase": "Running", "v": v}}
			want, err = json.Marshal(o)
			require.NoError(t, err)
			got, err = Marshal(o)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

func TestMarshalOmitsEmptyFields(t *testing.T) {
	t.Parallel()
	for _, o := range []*Object{
		{},
		{Kind: "X", Metadata: ObjectMeta{Name: "n"}, Spec: map[string]any{}, Status: map[string]any{}},
		{Kind: "X", Metadata: ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}}},
	} {
		want, err := json.Marshal(o)
		require.NoError(t, err)
		got, err := Marshal(o)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

// Values the fast encoder leaves to encoding/json come out as it writes
// them, errors included.
func TestMarshalFallsBack(t *testing.T) {
	t.Parallel()
	type point struct{ X int }
	for _, v := range []any{point{X: 1}, float32(0.1), json.Number("12"), []string{"a"}, uint8(3)} {
		want, err := json.Marshal(map[string]any{"v": v})
		require.NoError(t, err)
		got, err := MarshalValue(map[string]any{"v": v})
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	for _, v := range []any{math.NaN(), math.Inf(-1)} {
		_, err := MarshalValue(v)
		require.Error(t, err)
		_, err = Marshal(&Object{Spec: map[string]any{"v": v}})
		require.Error(t, err)
	}
}

// FuzzMarshal checks that Marshal writes what encoding/json writes for any
// JSON document decoded into generic values, and for any string.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x<y"],"b":null}`, `"\u2028\ud800"`, `1e-7`, `[{}]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			got, err := MarshalValue(v)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
		s := string(data)
		want, err := json.Marshal(&Object{Kind: s, Metadata: ObjectMeta{Labels: map[string]string{s: s}}, Spec: map[string]any{s: s}})
		require.NoError(t, err)
		got, err := Marshal(&Object{Kind: s, Metadata: ObjectMeta{Labels: map[string]string{s: s}}, Spec: map[string]any{s: s}})
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

func BenchmarkMarshal(b *testing.B) {
	o := &Object{APIVersion: GroupVersion, Kind: "ToolCall",
		Metadata: ObjectMeta{Name: "tc-01m838dznb0fw7fnhm4rpnd4vc", Namespace: "default",
			Labels: map[string]string{"warden.dev/agent": "bench-bot", "warden.dev/tool": "bench.lookup"}, UID: "b7de955d-3861-4db3-a8ce-e2751d709ce9",
			ResourceVersion: "14", Generation: 1, CreationTimestamp: "2026-11-23T03:50:40Z"},
		Spec: map[string]any{"agentRef": map[string]any{"name": "bench-bot"}, "input": map[string]any{"q": 1.0},
			"sideEffects": map[string]any{"idempotencyKey": "5da6bd9ad8b9ed1843b617068c6dbae6c3715e183f0be9b01d3583139f5b60e6", "level": "read_only"}},
		Status: map[string]any{"phase": "Succeeded", "output": map[string]any{"items": []any{"alpha", "beta"}, "ok": true}}}
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Marshal(o)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(o)
		}
	})
}

// MarshalValue is the servers' JSON encoder: objects, lists of them and
// nil objects come out as encoding/json writes them.
func TestMarshalValueOfObjects(t *testing.T) {
	t.Parallel()
	o := &Object{APIVersion: GroupVersion, Kind: "ToolCall", Metadata: ObjectMeta{Name: "tc-1"},
		Status: map[string]any{"phase": "Succeeded", "output": map[string]any{"n": 1.0}}}
	for _, v := range []any{o, (*Object)(nil), []*Object{o, nil}, map[string]any{"items": []any{o}}, *o} {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := MarshalValue(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
