package agbom

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFile is the golden file of a format.
func goldenFile(format string) string {
	ext := map[string]string{FormatCycloneDX: "cdx.json", FormatSPDX: "spdx.json", FormatSWID: "swid.xml"}[format]
	return filepath.Join("testdata", "golden", "support-bot-g1."+ext)
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	b := fixtureBOM(t)
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			got, err := Render(b, format)
			require.NoError(t, err)
			path := goldenFile(format)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./app/agbom -run Golden -update to create it")
			require.Equal(t, string(want), string(got), "the %s rendering changed; if on purpose, rerun with -update", format)
		})
	}
}

// TestRenderDeterministic builds the BOM again from objects in another
// order and renders it twice: identical inputs give identical bytes.
func TestRenderDeterministic(t *testing.T) {
	t.Parallel()
	first := fixtureBOM(t)
	objs := loadFixture(t)
	m := compileManifest(t, objs, "support-bot")
	for i, j := 0, len(objs)-1; i < j; i, j = i+1, j-1 {
		objs[i], objs[j] = objs[j], objs[i]
	}
	second, err := Build(context.Background(), &fakeReader{objs: append(objs, m)}, m, testInfo)
	require.NoError(t, err)
	for _, format := range Formats() {
		a, err := Render(first, format)
		require.NoError(t, err)
		b, err := Render(second, format)
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), format)
	}
}

func TestRenderUnknownFormat(t *testing.T) {
	t.Parallel()
	_, err := Render(fixtureBOM(t), "xml")
	require.ErrorIs(t, err, ErrInvalid)
}

// jsonSchema compiles a JSON schema of testdata/schema with the schemas
// it references, asserting formats.
func jsonSchema(t *testing.T, main string, files map[string]string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for url, path := range files {
		f, err := os.Open(path)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(f)
		require.NoError(t, f.Close())
		require.NoError(t, err, path)
		require.NoError(t, c.AddResource(url, doc))
	}
	s, err := c.Compile(main)
	require.NoError(t, err)
	return s
}

func cycloneDXValidator(t *testing.T) *jsonschema.Schema {
	const base = "http://cyclonedx.org/schema/"
	return jsonSchema(t, base+"bom-1.6.schema.json", map[string]string{
		base + "bom-1.6.schema.json":  "testdata/schema/cyclonedx/bom-1.6.schema.json",
		base + "spdx.schema.json":     "testdata/schema/cyclonedx/spdx.schema.json",
		base + "jsf-0.82.schema.json": "testdata/schema/cyclonedx/jsf-0.82.schema.json",
	})
}

func spdxSchema(t *testing.T) *jsonschema.Schema {
	const id = "http://spdx.org/rdf/terms/2.3"
	return jsonSchema(t, id, map[string]string{id: "testdata/schema/spdx/spdx-2.3.schema.json"})
}

func validateJSON(t *testing.T, s *jsonschema.Schema, doc []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	return s.Validate(inst)
}

// validateSWID validates a SWID tag with xmllint against the ISO/IEC
// 19770-2:2015 schema, without network: the W3C schemas it imports come
// from Debian's xmltooling-schemas through an XML catalog.
func validateSWID(t *testing.T, doc []byte) error {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is missing: make test-deps installs libxml2-utils and xmltooling-schemas")
		}
		t.Skip("xmllint is missing: make test-deps installs libxml2-utils and xmltooling-schemas")
	}
	const w3c = "/usr/share/xml/xmltooling/"
	for _, f := range []string{"xmldsig-core-schema.xsd", "xml.xsd"} {
		if _, err := os.Stat(w3c + f); err != nil {
			t.Fatalf("%s%s is missing: make test-deps installs xmltooling-schemas", w3c, f)
		}
	}
	dir := t.TempDir()
	catalog := `<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <system systemId="http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd" uri="file://` + w3c + `xmldsig-core-schema.xsd"/>
  <system systemId="http://www.w3.org/2001/xml.xsd" uri="file://` + w3c + `xml.xsd"/>
  <uri name="http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd" uri="file://` + w3c + `xmldsig-core-schema.xsd"/>
  <uri name="http://www.w3.org/2001/xml.xsd" uri="file://` + w3c + `xml.xsd"/>
</catalog>
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.xml"), []byte(catalog), 0o644))
	tag := filepath.Join(dir, "tag.swidtag")
	require.NoError(t, os.WriteFile(tag, doc, 0o644))
	xsd, err := filepath.Abs("testdata/schema/swid/swid-schema-fixed-20160908.xsd")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), xmllint, "--nonet", "--noout", "--schema", xsd, tag)
	cmd.Env = append(os.Environ(), "XML_CATALOG_FILES="+filepath.Join(dir, "catalog.xml"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &swidError{out: strings.TrimSpace(string(out))}
	}
	return nil
}

type swidError struct{ out string }

func (e *swidError) Error() string { return "SWID tag does not validate: " + e.out }

func TestRenderValidatesAgainstSchemas(t *testing.T) {
	t.Parallel()
	b := fixtureBOM(t)
	// An agent with nothing but a model: the smallest documents.
	small := &BOM{Namespace: "n", Agent: "a", Generation: 3, Manifest: "a-g3", Revision: 2,
		CompiledAt: "2026-01-02T03:04:05Z", WardenVersion: "devel",
		Components: []Component{
			{Ref: "agent:a", Kind: KindAgent, Name: "a", Version: "g3"},
			{Ref: "model:m", Kind: KindModel, Name: "m", Provider: "p"},
		},
		Dependencies: []Dependency{{Ref: "agent:a", DependsOn: []string{"model:m"}}},
	}
	for _, tc := range []struct {
		name string
		bom  *BOM
	}{{"fixture", b}, {"small", small}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cdxDoc, err := Render(tc.bom, FormatCycloneDX)
			require.NoError(t, err)
			require.NoError(t, validateJSON(t, cycloneDXValidator(t), cdxDoc))
			spdxDoc, err := Render(tc.bom, FormatSPDX)
			require.NoError(t, err)
			require.NoError(t, validateJSON(t, spdxSchema(t), spdxDoc))
			swidDoc, err := Render(tc.bom, FormatSWID)
			require.NoError(t, err)
			require.NoError(t, validateSWID(t, swidDoc))
		})
	}
}

// TestSchemasRefuseBrokenDocuments holds the validators to failing: each
// format's document with a required part removed does not validate.
func TestSchemasRefuseBrokenDocuments(t *testing.T) {
	t.Parallel()
	b := fixtureBOM(t)
	breakJSON := func(doc []byte, field string) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(doc, &m))
		delete(m, field)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		return out
	}
	cdxDoc, err := Render(b, FormatCycloneDX)
	require.NoError(t, err)
	require.Error(t, validateJSON(t, cycloneDXValidator(t), breakJSON(cdxDoc, "specVersion")))
	require.Error(t, validateJSON(t, cycloneDXValidator(t), bytes.Replace(cdxDoc, []byte(`"machine-learning-model"`), []byte(`"llm"`), 1)))
	spdxDoc, err := Render(b, FormatSPDX)
	require.NoError(t, err)
	require.Error(t, validateJSON(t, spdxSchema(t), breakJSON(spdxDoc, "creationInfo")))
	swidDoc, err := Render(b, FormatSWID)
	require.NoError(t, err)
	require.Error(t, validateSWID(t, bytes.Replace(swidDoc, []byte(` tagId="`), []byte(` tagid="`), 1)))
}
