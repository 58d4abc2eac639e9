package jcs

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalizeRFC8785Examples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "section 3.2.2 sample",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "section 3.2.3 sorting by UTF-16 code units",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			name: "nested objects and arrays keep array order",
			in:   `{"b":[3,1,2],"a":{"z":1,"y":{"d":true,"c":null}}}`,
			want: `{"a":{"y":{"c":null,"d":true},"z":1},"b":[3,1,2]}`,
		},
		{
			name: "whitespace dropped, no html escaping",
			in:   " { \"x\" : \"<a & b>\" , \"y\" : [ ] , \"z\" : { } } ",
			want: `{"x":"<a & b>","y":[],"z":{}}`,
		},
		{
			name: "all short escapes and other controls",
			in:   `"\b\f\n\r\t\u0001\u001f\u007f"`,
			want: "\"\\b\\f\\n\\r\\t\\u0001\\u001f\u007f\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Canonicalize([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

// TestNumbersRFC8785AppendixB checks the IEEE 754 samples of RFC 8785
// Appendix B.
func TestNumbersRFC8785AppendixB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(math.Float64frombits(tt.bits))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestMarshalRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		err  error
	}{
		{"NaN", math.NaN(), ErrNumber},
		{"+Inf", math.Inf(1), ErrNumber},
		{"-Inf", math.Inf(-1), ErrNumber},
		{"int64 beyond 2^53", int64(1<<53 + 1), ErrNumber},
		{"bad json.Number", json.Number("1x"), ErrNumber},
		{"invalid UTF-8 value", "a\xffb", ErrInvalidUTF8},
		{"invalid UTF-8 key", map[string]any{"\xff": 1}, ErrInvalidUTF8},
		{"channel", make(chan int), ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Marshal(tt.v)
			require.ErrorIs(t, err, tt.err)
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		err  error
	}{
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"nested duplicate key", `[{"b":{"x":1,"x":1}}]`, ErrDuplicateKey},
		{"lone high surrogate", `["\ud83d"]`, ErrLoneSurrogate},
		{"lone low surrogate", `{"\ude00":1}`, ErrLoneSurrogate},
		{"high surrogate then other escape", `"\ud83d\u0041"`, ErrLoneSurrogate},
		{"trailing data", `{} {}`, nil},
		{"truncated", `{"a":`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Canonicalize([]byte(tt.in))
			require.Error(t, err)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
			}
		})
	}
}

func TestMarshalGoValues(t *testing.T) {
	t.Parallel()
	type schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties,omitempty"`
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"ints", []any{1, int64(-2), int32(3), json.Number("4.0")}, `[1,-2,3,4]`},
		{"string map and slice", map[string]any{"h": map[string]string{"b": "2", "a": "1"}, "l": []string{"x"}}, `{"h":{"a":"1","b":"2"},"l":["x"]}`},
		{"struct through encoding/json", schema{Type: "object", Properties: map[string]any{"n": 1.50}}, `{"properties":{"n":1.5},"type":"object"}`},
		{"nil", nil, `null`},
		{"escaped backslash before u is no escape", json.RawMessage(`"\\ud800"`), `"\\ud800"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tt.v)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestSHA256(t *testing.T) {
	t.Parallel()
	a, err := SHA256(map[string]any{"type": "object", "required": []any{"q"}})
	require.NoError(t, err)
	b, err := SHA256(map[string]any{"required": []any{"q"}, "type": "object"})
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, a)
	// sha256 of `{}`.
	e, err := SHA256(map[string]any{})
	require.NoError(t, err)
	require.Equal(t, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", e)
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x"]}`,
		`[1e30, 4.50, 2e-3, -0, 0.000001, 1e21, 5e-324]`,
		`{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`,
		`"\u0000\u001f\"\\"`,
		`{"a":{"a":{"a":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonicalize(raw)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form %q is not valid JSON", out)
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical form %q does not parse: %v", out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
	})
}
