package resource

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite docs/schemas from app/resource/schemas")

// publishedDir is where the schemas are published for users.
const publishedDir = "../../docs/schemas"

func TestPublishedSchemas(t *testing.T) {
	t.Parallel()
	entries, err := schemaFS.ReadDir("schemas")
	require.NoError(t, err)
	require.Len(t, entries, len(Kinds()))
	if *update {
		require.NoError(t, os.MkdirAll(publishedDir, 0o755))
	}
	for _, e := range entries {
		want, err := schemaFS.ReadFile("schemas/" + e.Name())
		require.NoError(t, err)
		path := filepath.Join(publishedDir, e.Name())
		if *update {
			require.NoError(t, os.WriteFile(path, want, 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run: go test ./app/resource -run TestPublishedSchemas -update")
		require.Equal(t, string(want), string(got), "%s differs from app/resource/schemas; run: go test ./app/resource -run TestPublishedSchemas -update", path)
	}
	published, err := os.ReadDir(publishedDir)
	require.NoError(t, err)
	require.Len(t, published, len(entries), "docs/schemas holds files that app/resource/schemas does not")
}

func TestSchemas(t *testing.T) {
	t.Parallel()
	set, err := compiledSchemas()
	require.NoError(t, err)
	for _, k := range Kinds() {
		raw, ok := Schema(k.Kind)
		require.True(t, ok, k.Kind)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
		props := doc["properties"].(map[string]any)
		require.Equal(t, k.APIVersion, props["apiVersion"].(map[string]any)["const"], k.Kind)
		require.Equal(t, k.Kind, props["kind"].(map[string]any)["const"])
		require.Equal(t, false, props["spec"].(map[string]any)["additionalProperties"], k.Kind)
		require.NotNil(t, set.byKind[k.Kind])
	}
	_, ok := Schema("Nope")
	require.False(t, ok)
}
