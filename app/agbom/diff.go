package agbom

import (
	"cmp"
	"slices"
)

// Diff is what changed between the BOMs of two generations of an agent.
type Diff struct {
	Namespace string `json:"namespace"`
	Agent     string `json:"agent"`
	// From and To are the generations compared, with the revision of
	// each BOM.
	From Side `json:"from"`
	To   Side `json:"to"`
	// Added and Removed are the components only To, or only From, has.
	Added   []Component `json:"added"`
	Removed []Component `json:"removed"`
	// Changed are the components both have whose name, version, provider,
	// hash, endpoint or properties differ.
	Changed []Change `json:"changed"`
}

// Side names one BOM of a Diff.
type Side struct {
	Generation    int64  `json:"generation"`
	Revision      int64  `json:"revision"`
	Manifest      string `json:"manifest"`
	CompiledAt    string `json:"compiledAt"`
	WardenVersion string `json:"wardenVersion"`
}

// Change is one component present in both BOMs that differs.
type Change struct {
	Ref    string        `json:"ref"`
	Kind   string        `json:"kind"`
	Name   string        `json:"name"`
	Fields []FieldChange `json:"fields"`
}

// FieldChange is one differing field: "version", "hash", "name",
// "provider", "endpoint", "description", or a property's name. An empty
// From or To means the field is unset on that side.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Empty reports whether the two BOMs have the same components.
func (d *Diff) Empty() bool { return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 }

// Compare returns the difference from a to b. The agent's own component
// is left out (its generation differs by construction); everything else is
// matched by Ref. Lists are sorted by Ref.
func Compare(a, b *BOM) *Diff {
	d := &Diff{Namespace: b.Namespace, Agent: b.Agent, From: side(a), To: side(b),
		Added: []Component{}, Removed: []Component{}, Changed: []Change{}}
	skip := func(c *Component) bool { return c.Kind == KindAgent }
	for i := range b.Components {
		c := &b.Components[i]
		if skip(c) {
			continue
		}
		old := a.Component(c.Ref)
		if old == nil {
			d.Added = append(d.Added, *c)
			continue
		}
		if fields := compareComponent(old, c); len(fields) > 0 {
			d.Changed = append(d.Changed, Change{Ref: c.Ref, Kind: c.Kind, Name: c.Name, Fields: fields})
		}
	}
	for i := range a.Components {
		c := &a.Components[i]
		if !skip(c) && b.Component(c.Ref) == nil {
			d.Removed = append(d.Removed, *c)
		}
	}
	return d
}

func side(b *BOM) Side {
	return Side{Generation: b.Generation, Revision: b.Revision, Manifest: b.Manifest, CompiledAt: b.CompiledAt, WardenVersion: b.WardenVersion}
}

func compareComponent(a, b *Component) []FieldChange {
	var out []FieldChange
	for _, f := range []struct{ name, from, to string }{
		{"name", a.Name, b.Name}, {"version", a.Version, b.Version}, {"provider", a.Provider, b.Provider},
		{"hash", a.Hash, b.Hash}, {"endpoint", a.Endpoint, b.Endpoint}, {"description", a.Description, b.Description},
	} {
		if f.from != f.to {
			out = append(out, FieldChange{Field: f.name, From: f.from, To: f.to})
		}
	}
	props := map[string]*FieldChange{}
	for _, p := range a.Properties {
		props[p.Name] = &FieldChange{Field: p.Name, From: p.Value}
	}
	for _, p := range b.Properties {
		if fc, ok := props[p.Name]; ok {
			fc.To = p.Value
		} else {
			props[p.Name] = &FieldChange{Field: p.Name, To: p.Value}
		}
	}
	var changed []FieldChange
	for _, fc := range props {
		// A property on one side only still counts when set to "".
		_, inA := a.Property(fc.Field)
		_, inB := b.Property(fc.Field)
		if fc.From != fc.To || inA != inB {
			changed = append(changed, *fc)
		}
	}
	slices.SortFunc(changed, func(x, y FieldChange) int { return cmp.Compare(x.Field, y.Field) })
	return append(out, changed...)
}
