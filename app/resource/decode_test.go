package resource

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		want  []Key
		check func(t *testing.T, objs []*Object)
	}{
		{
			name: "multi-document YAML with empty and comment-only documents",
			body: `---
# a model
apiVersion: warden.dev/v1alpha1
kind: Model
metadata:
  name: gpt
spec:
  provider: openai
  model: gpt-4o
  capabilities: {contextWindow: 128000}
  cost: {inputPerMillion: 2.5, outputPerMillion: 10}
---
---
# nothing here
...
--- 
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot, namespace: team-a, labels: {app: bot}}
spec:
  framework: {adapter: langgraph}
  modelRoute: {primary: gpt}
`,
			want: []Key{{KindModel, "", "gpt"}, {KindAgent, "team-a", "bot"}},
			check: func(t *testing.T, objs []*Object) {
				caps := objs[0].Spec["capabilities"].(map[string]any)
				require.Equal(t, int64(128000), caps["contextWindow"])
				cost := objs[0].Spec["cost"].(map[string]any)
				require.Equal(t, 2.5, cost["inputPerMillion"])
				require.Equal(t, int64(10), cost["outputPerMillion"])
				require.Equal(t, "bot", objs[1].Metadata.Labels["app"])
			},
		},
		{
			name: "JSON object",
			body: `{"apiVersion":"warden.dev/v1alpha1","kind":"Tenant","metadata":{"name":"acme"},"spec":{"displayName":"Acme"}}`,
			want: []Key{{KindTenant, "", "acme"}},
		},
		{
			name: "JSON array keeps big and fractional numbers",
			body: `[{"apiVersion":"warden.dev/v1alpha1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3,"x":9007199254740993,"y":1.5,"z":1e3,"w":18446744073709551616}},
			       {"apiVersion":"warden.dev/v1alpha1","kind":"Deployment","metadata":{"name":"d","namespace":"other"}}]`,
			want: []Key{{KindDeployment, "", "d"}, {KindDeployment, "other", "d"}},
			check: func(t *testing.T, objs []*Object) {
				s := objs[0].Spec
				require.Equal(t, int64(3), s["replicas"])
				require.Equal(t, int64(9007199254740993), s["x"])
				require.Equal(t, 1.5, s["y"])
				require.Equal(t, 1000.0, s["z"])
				require.Equal(t, 18446744073709551616.0, s["w"])
				b, err := json.Marshal(s)
				require.NoError(t, err)
				require.Contains(t, string(b), `"x":9007199254740993`)
			},
		},
		{
			name: "JSON List",
			body: `{"apiVersion":"v1","kind":"List","items":[
				{"apiVersion":"warden.dev/v1alpha1","kind":"Environment","metadata":{"name":"dev"}},
				{"apiVersion":"warden.dev/v1alpha1","kind":"Environment","metadata":{"name":"prod"}}]}`,
			want: []Key{{KindEnvironment, "", "dev"}, {KindEnvironment, "", "prod"}},
		},
		{
			name: "YAML List",
			body: "kind: List\nitems:\n- {apiVersion: warden.dev/v1alpha1, kind: Namespace, metadata: {name: a}}\n",
			want: []Key{{KindNamespace, "", "a"}},
		},
		{
			name: "YAML flow mapping that is not JSON",
			body: "{apiVersion: warden.dev/v1alpha1, kind: Namespace, metadata: {name: a}}",
			want: []Key{{KindNamespace, "", "a"}},
		},
		{
			name: "inline content after the separator",
			body: "--- {apiVersion: warden.dev/v1alpha1, kind: Namespace, metadata: {name: a}}\n--- # c\nkind: Namespace\napiVersion: warden.dev/v1alpha1\nmetadata: {name: b}\n",
			want: []Key{{KindNamespace, "", "a"}, {KindNamespace, "", "b"}},
		},
		{name: "empty body", body: "", want: []Key{}},
		{name: "comments only", body: "# hi\n---\n# there\n", want: []Key{}},
		{name: "empty JSON array", body: "[]", want: []Key{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := DecodeDocuments([]byte(tt.body))
			require.NoError(t, err)
			got := make([]Key, len(objs))
			for i, o := range objs {
				got[i] = o.Key()
			}
			require.Equal(t, tt.want, got)
			if tt.check != nil {
				tt.check(t, objs)
			}
		})
	}
}

func TestDecodeDocumentsErrors(t *testing.T) {
	t.Parallel()
	const ns = "apiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata: {name: a}\n"
	tests := []struct {
		name     string
		body     string
		document int
		line     int
		contains []string
	}{
		{
			name:     "malformed YAML names the line of the body",
			body:     ns + "---\n# comment\napiVersion: warden.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: x\n   bad: [\n",
			document: 1, line: 10,
			contains: []string{"document 1", "line 10"},
		},
		{
			name:     "malformed YAML in the first document",
			body:     "kind: Agent\n\tapiVersion: x\n",
			document: 0, line: 2,
			contains: []string{"document 0", "line 2"},
		},
		{name: "unknown kind", body: ns + "---\napiVersion: warden.dev/v1alpha1\nkind: agent\nmetadata: {name: b}\n", document: 1, contains: []string{`unknown kind "agent"`, `did you mean "Agent"`}},
		{name: "missing apiVersion", body: "kind: Agent\nmetadata: {name: b}\n", contains: []string{"document 0", "apiVersion is missing"}},
		{name: "missing kind", body: "apiVersion: warden.dev/v1alpha1\nmetadata: {name: b}\n", contains: []string{"kind is missing"}},
		{name: "missing both", body: "metadata: {name: b}\n", contains: []string{"apiVersion and kind is missing"}},
		{name: "missing name", body: ns + "---\napiVersion: warden.dev/v1alpha1\nkind: Agent\nmetadata: {labels: {a: b}}\n", document: 1, contains: []string{"metadata.name is required"}},
		{name: "duplicate with defaulted namespace", body: "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata: {name: a}\n---\napiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata: {name: a, namespace: default}\n", document: 1, contains: []string{"Model/default/a", "repeats document 0"}},
		{name: "duplicate in JSON array", body: `[{"apiVersion":"warden.dev/v1alpha1","kind":"Tenant","metadata":{"name":"a"}},{"apiVersion":"warden.dev/v1alpha1","kind":"Tenant","metadata":{"name":"a"}}]`, document: 1, contains: []string{"Tenant/a"}},
		{name: "scalar document", body: ns + "---\nhello\n", document: 1, contains: []string{"a string, not a mapping"}},
		{name: "list of scalars", body: "[1, 2]", contains: []string{"a number, not a mapping"}},
		{name: "JSON scalar", body: `"x"`, contains: []string{"not a mapping"}},
		{name: "List with bad items", body: `{"kind":"List","items":{"a":1}}`, contains: []string{"List items"}},
		{name: "unknown top-level field", body: ns + "sepc: {}\n", contains: []string{"document 0", `unknown field "sepc"`}},
		{name: "unknown metadata field", body: "apiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata: {name: a, nmespace: b}\n", contains: []string{`unknown field "nmespace"`}},
		{name: "alias bomb", body: "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n", contains: []string{"excessive aliasing"}},
		{name: "wrong type", body: "apiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata: {name: a}\nspec: [1]\n", contains: []string{"Namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := DecodeDocuments([]byte(tt.body))
			require.Nil(t, objs)
			var de *DocumentError
			require.True(t, errors.As(err, &de), "error %v is not a *DocumentError", err)
			require.Equal(t, tt.document, de.Document)
			require.Equal(t, tt.line, de.Line)
			for _, c := range tt.contains {
				require.Contains(t, de.Error(), c)
			}
		})
	}
}

func TestDecodeDocumentsLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[")
	for i := range MaxDocuments + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"apiVersion":"warden.dev/v1alpha1","kind":"Tenant","metadata":{"name":"t`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(`"}}`)
	}
	b.WriteString("]")
	_, err := DecodeDocuments([]byte(b.String()))
	var de *DocumentError
	require.ErrorAs(t, err, &de)
	require.Equal(t, MaxDocuments, de.Document)
	require.Contains(t, de.Error(), "too many documents")
}

func FuzzDecodeDocuments(f *testing.F) {
	f.Add([]byte("apiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata: {name: a}\n---\n# c\n"))
	f.Add([]byte(`[{"apiVersion":"warden.dev/v1alpha1","kind":"Tenant","metadata":{"name":"a"},"spec":{"x":1.5e300}}]`))
	f.Add([]byte(`{"kind":"List","items":[{"apiVersion":"x","kind":"Agent","metadata":{"name":"a"}}]}`))
	f.Add([]byte("--- {a: 1}\n---\n- 1\n...\n"))
	f.Add([]byte("kind: Agent\napiVersion: warden.dev/v1alpha1\nmetadata:\n  name: x\nspec:\n  tools: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		objs, err := DecodeDocuments(body)
		if err != nil {
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DocumentError", err)
			}
			return
		}
		for _, o := range objs {
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Fatalf("object without kind, apiVersion or name: %+v", o)
			}
			// Whatever decodes must default and validate without panicking.
			Default(o)
			_ = Validate(o)
		}
	})
}
