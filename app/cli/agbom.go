package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/agbom"
	"github.com/warden-dev/warden/app/client"
)

func newAgBOMCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agbom",
		Short: "Read, refresh and diff agents' bills of materials",
		Long: `An AgBOM lists what an agent's compiled manifest is made of: its framework adapter,
models (provider, model, version), tools (schemaSha, side-effect class), MCP servers
(pinned version, definition hash), memory and policies (with versions), the Warden
version that compiled it, and which part depends on which. Every generation of an
agent has one; a rewrite of a generation's manifest gives it a new revision.`,
	}
	cmd.AddCommand(newAgBOMGetCmd(a), newAgBOMDiffCmd(a), newAgBOMRefreshCmd(a))
	return cmd
}

func newAgBOMGetCmd(a *app) *cobra.Command {
	var o client.AgBOMOptions
	cmd := &cobra.Command{
		Use:   "get AGENT",
		Short: "Print an agent's AgBOM (CycloneDX 1.6 JSON, SPDX 2.3 JSON or a SWID tag)",
		Example: `  warden agbom get support-bot
  warden agbom get support-bot --format spdx --generation 3 > support-bot-g3.spdx.json`,
		Args: wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(agbom.Formats(), o.Format) {
				return usagef("unknown --format %q: use %s", o.Format, strings.Join(agbom.Formats(), ", "))
			}
			if o.Generation < 0 {
				return usagef("--generation must be a positive integer")
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			doc, _, err := c.AgBOMGet(cmd.Context(), conn.Namespace, args[0], o)
			if err != nil {
				return err
			}
			_, err = a.env.Stdout.Write(doc)
			return err
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVar(&o.Format, "format", agbom.FormatCycloneDX, "cyclonedx, spdx or swid")
	cmd.Flags().Int64Var(&o.Generation, "generation", 0, "the agent's generation (default: the newest compiled)")
	return cmd
}

func newAgBOMRefreshCmd(a *app) *cobra.Command {
	var gen int64
	cmd := &cobra.Command{
		Use:   "refresh AGENT",
		Short: "Regenerate an agent's stored AgBOM now",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if gen < 0 {
				return usagef("--generation must be a positive integer")
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			r, err := c.AgBOMRefresh(cmd.Context(), conn.Namespace, args[0], gen)
			if err != nil {
				return err
			}
			what := "unchanged"
			if r.Updated {
				what = "updated"
			}
			fmt.Fprintf(a.env.Stdout, "AgBOM of %s/%s generation %d %s (revision %d)\n", r.Namespace, r.Agent, r.Generation, what, r.Revision)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().Int64Var(&gen, "generation", 0, "the agent's generation (default: the newest compiled)")
	return cmd
}

type agbomDiffOptions struct {
	from, to int64
	output   string
}

func newAgBOMDiffCmd(a *app) *cobra.Command {
	var o agbomDiffOptions
	cmd := &cobra.Command{
		Use:   "diff AGENT",
		Short: "Show what changed between the AgBOMs of two generations",
		Example: `  warden agbom diff support-bot --from 3 --to 4
  warden agbom diff support-bot            # the newest generation against the one before
  warden agbom diff support-bot --from 1 -o json`,
		Args: wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != outTable && o.output != outJSON && o.output != outYAML {
				return usagef("unknown output format %q: use table, json or yaml", o.output)
			}
			if o.from < 0 || o.to < 0 {
				return usagef("--from and --to must be positive integers")
			}
			return a.agbomDiff(cmd.Context(), args[0], o)
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.Int64Var(&o.from, "from", 0, "the older generation (default: the one before --to)")
	f.Int64Var(&o.to, "to", 0, "the newer generation (default: the newest compiled)")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table (readable), json or yaml")
	return cmd
}

func (a *app) agbomDiff(ctx context.Context, agent string, o agbomDiffOptions) error {
	c, conn, err := a.connect()
	if err != nil {
		return err
	}
	d, err := c.AgBOMDiff(ctx, conn.Namespace, agent, o.from, o.to)
	if err != nil {
		return err
	}
	switch o.output {
	case outJSON:
		return writeJSON(a.env.Stdout, d)
	case outYAML:
		return writeYAML(a.env.Stdout, d)
	}
	writeAgBOMDiff(a.env.Stdout, d)
	return nil
}

// writeAgBOMDiff prints a diff for people:
//
//	AgBOM of default/support-bot: generation 1 (revision 1) → generation 2 (revision 1)
//	+ tool     github.create_issue  sideEffect=external_write schemaSha=sha256:…
//	~ model    gpt-4o
//	      version  2024-08-06 → 2024-11-20
func writeAgBOMDiff(w io.Writer, d *agbom.Diff) {
	side := func(s agbom.Side) string {
		out := fmt.Sprintf("generation %d (revision %d", s.Generation, s.Revision)
		if s.WardenVersion != "" {
			out += ", warden " + s.WardenVersion
		}
		return out + ")"
	}
	fmt.Fprintf(w, "AgBOM of %s/%s: %s → %s\n", d.Namespace, d.Agent, side(d.From), side(d.To))
	if d.Empty() {
		fmt.Fprintln(w, "No components changed.")
		return
	}
	fmt.Fprintf(w, "%d added, %d removed, %d changed\n\n", len(d.Added), len(d.Removed), len(d.Changed))
	width := 0
	for _, cs := range [][]agbom.Component{d.Added, d.Removed} {
		for _, c := range cs {
			width = max(width, len(c.Kind))
		}
	}
	for _, c := range d.Changed {
		width = max(width, len(c.Kind))
	}
	line := func(mark string, c agbom.Component) {
		facts := []string{}
		if c.Version != "" {
			facts = append(facts, "version="+c.Version)
		}
		for _, name := range []string{"sideEffect", "schemaSha", "definitionSha", "routeId"} {
			if v, ok := c.Property(name); ok {
				facts = append(facts, name+"="+v)
			}
		}
		fmt.Fprintf(w, "%s %-*s  %s  %s\n", mark, width, c.Kind, c.Name, strings.Join(facts, " "))
	}
	for _, c := range d.Added {
		line("+", c)
	}
	for _, c := range d.Removed {
		line("-", c)
	}
	for _, ch := range d.Changed {
		fmt.Fprintf(w, "~ %-*s  %s\n", width, ch.Kind, ch.Name)
		fw := 0
		for _, f := range ch.Fields {
			fw = max(fw, len(f.Field))
		}
		for _, f := range ch.Fields {
			fmt.Fprintf(w, "      %-*s  %s → %s\n", fw, f.Field, orDash(f.From), orDash(f.To))
		}
	}
}
