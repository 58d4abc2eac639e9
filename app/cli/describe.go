package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/warden-dev/warden/app/resource"
)

func newDescribeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "describe KIND NAME",
		Short:   "Show one resource in detail: metadata, spec and status",
		Example: `  warden describe agent support-bot`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := lookupKind(args[0])
			if err != nil {
				return err
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			obj, err := c.Get(cmd.Context(), k.Plural, conn.Namespace, args[1])
			if err != nil {
				return err
			}
			if k.Kind == resource.KindToolCall {
				return describeToolCall(cmd.Context(), a.env.Stdout, c, obj, a.env.Now())
			}
			return describe(a.env.Stdout, obj, a.env.Now())
		},
	}
	a.addNamespaceFlag(cmd)
	return cmd
}

// describe prints an object the way kubectl describe does: aligned
// metadata fields, then spec and status as indented YAML.
func describe(w io.Writer, o *resource.Object, now time.Time) error {
	created := o.Metadata.CreationTimestamp
	if created != "" {
		created += " (" + age(created, now) + " ago)"
	}
	fields := [][2]string{
		{"Name", o.Metadata.Name},
		{"Namespace", o.Metadata.Namespace},
		{"Kind", o.Kind},
		{"API Version", o.APIVersion},
		{"Labels", labelsText(o.Metadata.Labels)},
		{"Annotations", labelsText(o.Metadata.Annotations)},
		{"UID", o.Metadata.UID},
		{"Resource Version", o.Metadata.ResourceVersion},
		{"Generation", fmt.Sprint(o.Metadata.Generation)},
		{"Created", created},
	}
	for _, f := range fields {
		if f[0] == "Namespace" && f[1] == "" {
			continue
		}
		fmt.Fprintf(w, "%-18s%s\n", f[0]+":", orNone(f[1]))
	}
	for _, sec := range []struct {
		title string
		body  map[string]any
	}{{"Spec", o.Spec}, {"Status", o.Status}} {
		fmt.Fprintln(w, sec.title+":")
		if len(sec.body) == 0 {
			fmt.Fprintln(w, "  <none>")
			continue
		}
		b, err := yaml.Marshal(sec.body)
		if err != nil {
			return fmt.Errorf("encode %s: %w", strings.ToLower(sec.title), err)
		}
		for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
