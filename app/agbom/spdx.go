package agbom

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// spdxNamespaceBase is the prefix of every AgBOM's documentNamespace; the
// rest is the generation's serial and the revision, so each revision of
// each generation has its own.
const spdxNamespaceBase = "https://warden.dev/spdxdocs/agbom/"

// SPDX renders b as an SPDX 2.3 JSON document: one package per component
// (the agent's is the described one), DEPENDS_ON relationships for the
// dependencies, Warden as the creating tool, and Warden's facts about each
// component as "warden:<name>=<value>" lines of the package comment.
func SPDX(b *BOM) ([]byte, error) {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      b.Namespace + "/" + b.Manifest,
		DocumentNamespace: spdxNamespaceBase + b.serial() + "/r" + strconv.FormatInt(b.Revision, 10),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "warden-" + b.WardenVersion}},
			Created:  b.CompiledAt,
		},
	}
	ids := spdxIDs(b)
	for i := range b.Components {
		c := &b.Components[i]
		p := &spdx.Package{
			PackageName:               c.Name,
			PackageSPDXIdentifier:     ids[c.Ref],
			PackageVersion:            c.Version,
			PackageDownloadLocation:   "NOASSERTION",
			FilesAnalyzed:             false,
			IsFilesAnalyzedTagPresent: true,
			PackageDescription:        c.Description,
			PrimaryPackagePurpose:     spdxPurpose(c.Kind),
			PackageComment:            spdxComment(c),
		}
		if c.Provider != "" {
			p.PackageSupplier = &common.Supplier{Supplier: c.Provider, SupplierType: "Organization"}
		}
		if h := hexOf(c.Hash); h != "" {
			p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: h}}
		}
		if c.Endpoint != "" {
			p.PackageExternalReferences = []*spdx.PackageExternalReference{{Category: "OTHER", RefType: "endpoint", Locator: c.Endpoint}}
		}
		doc.Packages = append(doc.Packages, p)
	}
	doc.Relationships = append(doc.Relationships, &spdx.Relationship{
		RefA: common.MakeDocElementID("", "DOCUMENT"), RefB: common.MakeDocElementID("", string(ids[b.AgentRef()])),
		Relationship: common.TypeRelationshipDescribe,
	})
	for _, d := range b.Dependencies {
		for _, on := range d.DependsOn {
			doc.Relationships = append(doc.Relationships, &spdx.Relationship{
				RefA: common.MakeDocElementID("", string(ids[d.Ref])), RefB: common.MakeDocElementID("", string(ids[on])),
				Relationship: common.TypeRelationshipDependsOn,
			})
		}
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.Indent("  "), spdxjson.EscapeHTML(false)); err != nil {
		return nil, fmt.Errorf("agbom: encode SPDX: %w", err)
	}
	return buf.Bytes(), nil
}

// spdxIDs gives every component an SPDX identifier made of its Ref with the
// characters SPDX does not allow replaced, and a suffix where two would
// collide.
func spdxIDs(b *BOM) map[string]common.ElementID {
	ids := make(map[string]common.ElementID, len(b.Components))
	taken := map[common.ElementID]bool{"DOCUMENT": true}
	for _, c := range b.Components {
		base := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
				return r
			}
			return '-'
		}, c.Ref)
		id := common.ElementID(base)
		for n := 2; taken[id]; n++ {
			id = common.ElementID(base + "-" + strconv.Itoa(n))
		}
		taken[id] = true
		ids[c.Ref] = id
	}
	return ids
}

func spdxPurpose(kind string) string {
	switch kind {
	case KindAgent:
		return "APPLICATION"
	case KindFramework:
		return "FRAMEWORK"
	}
	return "OTHER"
}

func spdxComment(c *Component) string {
	var sb strings.Builder
	sb.WriteString("warden:kind=" + c.Kind)
	for _, p := range c.Properties {
		sb.WriteString("\nwarden:" + p.Name + "=" + p.Value)
	}
	return sb.String()
}
