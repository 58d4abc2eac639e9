package aos

import (
	"fmt"
	"slices"
	"strings"
)

// InputMap turns AOS tool inputs into the object the gateway hands to a
// tool and to policy. Two inputs with the same name are an error: the
// object could hold only one of them, and which one the tool would see is
// not for this package to guess.
func InputMap(inputs []ToolArgumentValue) (map[string]any, error) {
	m := make(map[string]any, len(inputs))
	for i, in := range inputs {
		if _, dup := m[in.Name]; dup {
			return nil, fmt.Errorf("aos: inputs[%d]: duplicate input %q", i, in.Name)
		}
		m[in.Name] = in.Value
	}
	return m, nil
}

// Inputs turns a tool's input object into AOS inputs, sorted by name so
// the same object always gives the same request.
func Inputs(input map[string]any) []ToolArgumentValue {
	out := make([]ToolArgumentValue, 0, len(input))
	for name, v := range input {
		out = append(out, ToolArgumentValue{Name: name, Value: v})
	}
	slices.SortFunc(out, func(a, b ToolArgumentValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Outputs turns a tool result into AOS outputs: one text part holding the
// JSON of result (a string result too, so OutputValue gives back a string
// and not whatever the string happens to parse as). A nil result gives no
// parts, as the AOS examples send for a tool that returned nothing.
func Outputs(result any) ([]TextPart, error) {
	if result == nil {
		return []TextPart{}, nil
	}
	b, err := marshalJSON(result)
	if err != nil {
		return nil, fmt.Errorf("aos: encode tool result: %w", err)
	}
	return []TextPart{{Kind: "text", Text: string(b)}}, nil
}

// OutputValue turns AOS outputs back into a value: nil for no parts, the
// part's value for one part, and a []any of them for several. A part whose
// text is JSON stands for the value it encodes (numbers as json.Number);
// any other text stands for itself, as a string.
func OutputValue(outputs []TextPart) any {
	switch len(outputs) {
	case 0:
		return nil
	case 1:
		return textValue(outputs[0].Text)
	}
	vs := make([]any, len(outputs))
	for i, o := range outputs {
		vs[i] = textValue(o.Text)
	}
	return vs
}

func textValue(text string) any {
	if v, err := parseJSON([]byte(text)); err == nil {
		return v
	}
	return text
}
