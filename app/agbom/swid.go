package agbom

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// SWID namespaces: the ISO/IEC 19770-2:2015 schema's, and Warden's own for
// the attributes the schema leaves open (any attribute of another
// namespace, on every element).
const (
	swidNamespace   = "http://standards.iso.org/iso/19770/-2/2015/schema.xsd"
	wardenNamespace = "https://warden.dev/agbom/swid"
)

type swidTag struct {
	XMLName       xml.Name       `xml:"SoftwareIdentity"`
	XMLNS         string         `xml:"xmlns,attr"`
	XMLNSWarden   string         `xml:"xmlns:warden,attr"`
	Name          string         `xml:"name,attr"`
	TagID         string         `xml:"tagId,attr"`
	TagVersion    int64          `xml:"tagVersion,attr"`
	Version       string         `xml:"version,attr"`
	VersionScheme string         `xml:"versionScheme,attr"`
	Entities      []swidEntity   `xml:"Entity"`
	Links         []swidLink     `xml:"Link,omitempty"`
	Meta          swidMeta       `xml:"Meta"`
	Payload       swidCollection `xml:"Payload"`
}

type swidEntity struct {
	Name  string `xml:"name,attr"`
	RegID string `xml:"regid,attr"`
	Role  string `xml:"role,attr"`
}

type swidLink struct {
	Rel  string `xml:"rel,attr"`
	Href string `xml:"href,attr"`
	Type string `xml:"type,attr,omitempty"`
}

type swidMeta struct {
	Product           string     `xml:"product,attr"`
	ColloquialVersion string     `xml:"colloquialVersion,attr"`
	Revision          string     `xml:"revision,attr"`
	Generator         string     `xml:"generator,attr"`
	Summary           string     `xml:"summary,attr,omitempty"`
	Extra             []xml.Attr `xml:",any,attr"`
}

type swidCollection struct {
	Resources []swidResource `xml:"Resource"`
}

type swidResource struct {
	Type  string     `xml:"type,attr"`
	Attrs []xml.Attr `xml:",any,attr"`
}

// SWID renders b as an ISO/IEC 19770-2:2015 SWID tag: the agent's
// generation is the software (version "g<N>", tagVersion the revision),
// Warden the tag creator, and each component a Payload Resource whose
// type is the component kind and whose facts, hashes and dependencies are
// attributes of Warden's namespace (warden:name, warden:version,
// warden:hash, warden:dependsOn …).
func SWID(b *BOM) ([]byte, error) {
	tag := swidTag{
		XMLNS: swidNamespace, XMLNSWarden: wardenNamespace,
		Name: b.Agent, TagID: "warden.dev+agbom+" + b.serial(), TagVersion: b.Revision,
		Version: "g" + strconv.FormatInt(b.Generation, 10), VersionScheme: "alphanumeric",
		Entities: []swidEntity{{Name: "Warden", RegID: "https://warden.dev", Role: "tagCreator softwareCreator"}},
		Meta: swidMeta{
			Product: b.Agent, ColloquialVersion: strconv.FormatInt(b.Generation, 10),
			Revision: strconv.FormatInt(b.Revision, 10), Generator: "warden " + b.WardenVersion,
			Extra: []xml.Attr{
				wattr("namespace", b.Namespace), wattr("manifest", b.Manifest), wattr("manifestSha", b.ManifestSha),
				wattr("compiledAt", b.CompiledAt), wattr("wardenVersion", b.WardenVersion),
			},
		},
	}
	if a := b.Component(b.AgentRef()); a != nil {
		tag.Meta.Summary = a.Description
	}
	if b.Endpoint != "" {
		tag.Links = []swidLink{{Rel: "alternate", Href: b.Endpoint + "?format=" + FormatCycloneDX, Type: "application/vnd.cyclonedx+json"}}
	}
	deps := make(map[string][]string, len(b.Dependencies))
	for _, d := range b.Dependencies {
		deps[d.Ref] = d.DependsOn
	}
	for i := range b.Components {
		c := &b.Components[i]
		attrs := []xml.Attr{wattr("ref", c.Ref), wattr("name", c.Name)}
		for _, f := range [][2]string{{"version", c.Version}, {"provider", c.Provider}, {"hash", c.Hash}, {"endpoint", c.Endpoint}} {
			if f[1] != "" {
				attrs = append(attrs, wattr(f[0], f[1]))
			}
		}
		for _, p := range c.Properties {
			if !ncName(p.Name) {
				return nil, fmt.Errorf("agbom: property %q of %s cannot be a SWID attribute name", p.Name, c.Ref)
			}
			attrs = append(attrs, wattr(p.Name, p.Value))
		}
		if on := deps[c.Ref]; len(on) > 0 {
			attrs = append(attrs, wattr("dependsOn", strings.Join(on, " ")))
		}
		tag.Payload.Resources = append(tag.Payload.Resources, swidResource{Type: c.Kind, Attrs: dedupeAttrs(attrs)})
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(tag); err != nil {
		return nil, fmt.Errorf("agbom: encode SWID: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

func wattr(name, value string) xml.Attr {
	return xml.Attr{Name: xml.Name{Local: "warden:" + name}, Value: value}
}

// dedupeAttrs keeps the first of attributes with one name: XML allows an
// attribute once per element, and a property may repeat a field.
func dedupeAttrs(attrs []xml.Attr) []xml.Attr {
	seen := make(map[string]bool, len(attrs))
	out := attrs[:0]
	for _, a := range attrs {
		if !seen[a.Name.Local] {
			seen[a.Name.Local] = true
			out = append(out, a)
		}
	}
	return out
}

// ncName reports whether s can be the local part of an XML attribute name
// (an ASCII NCName; property names are Warden's own identifiers).
func ncName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}
