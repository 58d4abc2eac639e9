package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Output formats of get.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
)

func checkOutput(o string) error {
	switch o {
	case outTable, outWide, outJSON, outYAML:
		return nil
	}
	return usagef("unknown output format %q: use table, wide, json or yaml", o)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// writeYAML prints v as YAML.
func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// age renders the time since an RFC 3339 timestamp like kubectl: 45s,
// 12m, 5h, 3d.
func age(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "<unknown>"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	default:
		return strconv.Itoa(int(d.Hours()/24)) + "d"
	}
}

// lookup walks a generic JSON object by keys.
func lookup(m map[string]any, path ...string) (any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// text renders a scalar for a table cell; "" when absent.
func text(v any, ok bool) string {
	if !ok || v == nil {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	case []any:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			if s := text(e, true); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ",")
	case map[string]any:
		if n, ok := t["name"]; ok {
			return text(n, true)
		}
		return "{…}"
	default:
		return fmt.Sprint(t)
	}
}

// length renders the number of items of a list field.
func length(v any, ok bool) string {
	if !ok {
		return "0"
	}
	if l, isList := v.([]any); isList {
		return strconv.Itoa(len(l))
	}
	return "0"
}

// labelsText renders labels as k=v pairs in key order.
func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// orDash renders an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// table aligns rows into columns separated by three spaces. Widths are
// fixed by the first rows printed, so that rows streamed later by a watch
// line up with them.
type table struct {
	w io.Writer
	// min holds minimum column widths, e.g. room for "MODIFIED" in the
	// EVENT column of a watch.
	min    []int
	widths []int
}

// print writes header and rows, fixing the column widths.
func (t *table) print(header []string, rows [][]string) {
	t.widths = make([]int, len(header))
	copy(t.widths, t.min)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			t.widths[i] = max(t.widths[i], len([]rune(c)))
		}
	}
	t.row(header)
	for _, r := range rows {
		t.row(r)
	}
}

// row writes one row padded to the fixed widths.
func (t *table) row(r []string) {
	var b strings.Builder
	for i, c := range r {
		if i == len(r)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		w := 0
		if i < len(t.widths) {
			w = t.widths[i]
		}
		b.WriteString(strings.Repeat(" ", max(w-len([]rune(c)), 0)+3))
	}
	fmt.Fprintln(t.w, b.String())
}
