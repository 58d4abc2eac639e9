package agbom

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"testing"

	"github.com/warden-dev/warden/app/compile"
)

// FuzzParseManifestName: what parses is a manifest name compile would
// write, and every name compile writes parses back.
func FuzzParseManifestName(f *testing.F) {
	for _, s := range []string{"support-bot-g12", "a-g1", "gpt-g4-g2", "a-g0", "-g1", "agent", "a-g-1", "a-g+1", "a-g99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		agent, gen, ok := ParseManifestName(s)
		if !ok {
			return
		}
		if gen < 1 || agent == "" {
			t.Fatalf("%q parsed to %q, %d", s, agent, gen)
		}
		again, gen2, ok2 := ParseManifestName(compile.ManifestName(agent, gen))
		if !ok2 || again != agent || gen2 != gen {
			t.Fatalf("%q: %q g%d does not round-trip", s, agent, gen)
		}
	})
}

// FuzzRender: whatever names, versions and properties a BOM holds (they
// come from users' resources), every format renders a well-formed
// document.
func FuzzRender(f *testing.F) {
	f.Add("support-bot", "gpt-4o", "2024-08-06", "sideEffect", "financial", "sha256:ab")
	f.Add("a\"<>&'", "m\x00\x01", "\xff\xfe", "na me", "v\nw", "")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, agent, model, version, prop, value, hash string) {
		b := &BOM{Namespace: "n", Agent: agent, Generation: 1, Manifest: agent + "-g1", Revision: 1, CompiledAt: "2026-01-02T03:04:05Z",
			WardenVersion: version, Endpoint: "http://x/" + agent,
			Components: []Component{
				{Ref: "agent:" + agent, Kind: KindAgent, Name: agent},
				{Ref: "model:" + model, Kind: KindModel, Name: model, Version: version, Hash: hash,
					Properties: []Property{{Name: prop, Value: value}}},
				{Ref: "tool:" + model, Kind: KindTool, Name: model, Endpoint: value, Properties: []Property{{Name: prop, Value: value}}},
			},
			Dependencies: []Dependency{{Ref: "agent:" + agent, DependsOn: []string{"model:" + model, "tool:" + model}}},
		}
		b.normalize()
		for _, format := range []string{FormatCycloneDX, FormatSPDX} {
			doc, err := Render(b, format)
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if !json.Valid(doc) {
				t.Fatalf("%s: invalid JSON", format)
			}
		}
		doc, err := Render(b, FormatSWID)
		if err != nil {
			return // a name XML cannot hold is refused, never emitted broken
		}
		d := xml.NewDecoder(bytes.NewReader(doc))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SWID not well-formed: %v\n%s", err, doc)
			}
		}
	})
}
