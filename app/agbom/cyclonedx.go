package agbom

import (
	"bytes"
	"fmt"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Formats of Render.
const (
	FormatCycloneDX = "cyclonedx"
	FormatSPDX      = "spdx"
	FormatSWID      = "swid"
)

// Formats returns the formats Render knows, the default first.
func Formats() []string { return []string{FormatCycloneDX, FormatSPDX, FormatSWID} }

// ContentType returns the media type of a format's documents.
func ContentType(format string) string {
	switch format {
	case FormatSPDX:
		return "application/spdx+json"
	case FormatSWID:
		return "application/swid+xml"
	}
	return "application/vnd.cyclonedx+json; version=1.6"
}

// Render encodes b in format ("" means cyclonedx). Equal BOMs give equal
// bytes.
func Render(b *BOM, format string) ([]byte, error) {
	switch format {
	case "", FormatCycloneDX:
		return CycloneDX(b)
	case FormatSPDX:
		return SPDX(b)
	case FormatSWID:
		return SWID(b)
	}
	return nil, fmt.Errorf("%w: unknown format %q: use cyclonedx, spdx or swid", ErrInvalid, format)
}

// cycloneDXSchema is the JSON schema a CycloneDX AgBOM names.
const cycloneDXSchema = "http://cyclonedx.org/schema/bom-1.6.schema.json"

// propertyPrefix namespaces Warden's properties in CycloneDX, as the
// CycloneDX property taxonomy asks.
const propertyPrefix = "warden:"

// CycloneDX renders b as a CycloneDX 1.6 JSON document: the agent is the
// metadata component, the framework adapter a framework component, models
// machine-learning-model components, policies, memories, RAG indexes and
// knowledge sources data components, tools and MCP servers services;
// Warden is the metadata tool.
func CycloneDX(b *BOM) ([]byte, error) {
	bom := cdx.NewBOM()
	// Built as 1.6 from the start, so Encode needs no EncodeVersion (whose
	// conversion deep-copies the BOM through gob, most of the cost).
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.JSONSchema = cycloneDXSchema
	bom.XMLNS = ""
	bom.SerialNumber = "urn:uuid:" + b.serial()
	bom.Version = int(b.Revision)
	warden := cdx.Component{Type: cdx.ComponentTypeApplication, Name: "warden", Version: b.WardenVersion,
		Publisher: "Warden", BOMRef: "warden"}
	bom.Metadata = &cdx.Metadata{
		Timestamp: b.CompiledAt,
		Tools:     &cdx.ToolsChoice{Components: &[]cdx.Component{warden}},
		Properties: &[]cdx.Property{
			{Name: propertyPrefix + "manifest", Value: b.Manifest},
			{Name: propertyPrefix + "manifestSha", Value: b.ManifestSha},
			{Name: propertyPrefix + "namespace", Value: b.Namespace},
			{Name: propertyPrefix + "wardenVersion", Value: b.WardenVersion},
		},
	}
	var components []cdx.Component
	var services []cdx.Service
	for i := range b.Components {
		c := &b.Components[i]
		switch c.Kind {
		case KindAgent:
			agent := cdxComponent(c, cdx.ComponentTypeApplication)
			bom.Metadata.Component = &agent
		case KindTool, KindMCPServer:
			services = append(services, cdxService(c))
		case KindModel:
			components = append(components, cdxComponent(c, cdx.ComponentTypeMachineLearningModel))
		case KindFramework:
			components = append(components, cdxComponent(c, cdx.ComponentTypeFramework))
		case KindPolicy:
			comp := cdxComponent(c, cdx.ComponentTypeData)
			comp.Data = &[]cdx.ComponentData{{Type: cdx.ComponentDataTypeConfiguration, Name: c.Name}}
			components = append(components, comp)
		case KindMemory, KindRAGIndex, KindKnowledgeSource:
			comp := cdxComponent(c, cdx.ComponentTypeData)
			comp.Data = &[]cdx.ComponentData{{Type: cdx.ComponentDataTypeDataset, Name: c.Name}}
			components = append(components, comp)
		}
	}
	if components != nil {
		bom.Components = &components
	}
	if services != nil {
		bom.Services = &services
	}
	deps := make([]cdx.Dependency, len(b.Dependencies))
	for i, d := range b.Dependencies {
		on := d.DependsOn
		deps[i] = cdx.Dependency{Ref: d.Ref, Dependencies: &on}
	}
	bom.Dependencies = &deps

	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false)
	if err := enc.Encode(bom); err != nil {
		return nil, fmt.Errorf("agbom: encode CycloneDX: %w", err)
	}
	return buf.Bytes(), nil
}

func cdxComponent(c *Component, typ cdx.ComponentType) cdx.Component {
	out := cdx.Component{BOMRef: c.Ref, Type: typ, Name: c.Name, Version: c.Version, Description: c.Description,
		Publisher: c.Provider}
	if c.Provider != "" {
		out.Supplier = &cdx.OrganizationalEntity{Name: c.Provider}
	}
	if h := hexOf(c.Hash); h != "" {
		out.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: h}}
	}
	if c.Endpoint != "" {
		out.ExternalReferences = &[]cdx.ExternalReference{{Type: cdx.ERTypeOther, URL: c.Endpoint, Comment: "endpoint"}}
	}
	out.Properties = cdxProperties(c)
	return out
}

func cdxService(c *Component) cdx.Service {
	out := cdx.Service{BOMRef: c.Ref, Name: c.Name, Version: c.Version, Description: c.Description}
	if c.Endpoint != "" {
		out.Endpoints = &[]string{c.Endpoint}
		authenticated := true
		out.Authenticated = &authenticated
	}
	// Services carry no hashes in CycloneDX: a tool's schemaSha and an MCP
	// server's definitionSha are among its properties.
	out.Properties = cdxProperties(c)
	return out
}

func cdxProperties(c *Component) *[]cdx.Property {
	props := []cdx.Property{{Name: propertyPrefix + "kind", Value: c.Kind}}
	for _, p := range c.Properties {
		props = append(props, cdx.Property{Name: propertyPrefix + p.Name, Value: p.Value})
	}
	return &props
}
