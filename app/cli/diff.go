package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/api"
)

func newDiffCmd(a *app) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|-",
		Short: "Show what apply would change; exit code 1 when anything would",
		Long: `Diff compares the manifests with the stored resources, field by field. Like
'kubectl diff' it exits 0 when nothing would change, 1 when something would, and
another code on errors.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := readManifests(a.env.Stdin, files)
			if err != nil {
				return err
			}
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.Diff(cmd.Context(), b.body)
			if err != nil {
				return explainRejection(a.env.Stderr, err, b)
			}
			printDiff(a.env.Stdout, res)
			if res.Changed() {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	addFileFlag(cmd, &files)
	return cmd
}

// printDiff renders a DiffResult as a unified-style, per-field diff:
//
//	~ agent/support-bot (update)
//	    spec.modelRoute.primary
//	-     gpt-4o
//	+     claude-sonnet
func printDiff(w io.Writer, res *api.DiffResult) {
	var create, update, same int
	for _, it := range res.Items {
		ref := describeRef(it.Kind, it.Namespace, it.Name)
		switch it.Action {
		case api.DiffCreate:
			create++
			fmt.Fprintf(w, "+ %s (create)\n", ref)
		case api.DiffUpdate:
			update++
			fmt.Fprintf(w, "~ %s (update)\n", ref)
		default:
			same++
			continue
		}
		for _, ch := range it.Changes {
			fmt.Fprintf(w, "    %s\n", ch.Path)
			if ch.Op != "add" {
				writeValue(w, "-     ", ch.Old)
			}
			if ch.Op != "remove" {
				writeValue(w, "+     ", ch.New)
			}
		}
	}
	fmt.Fprintf(w, "%d to create, %d to update, %d unchanged\n", create, update, same)
}

// writeValue prints v after prefix: scalars as themselves, objects and
// lists as indented JSON, one line per row, each row prefixed.
func writeValue(w io.Writer, prefix string, v any) {
	var text string
	switch t := v.(type) {
	case nil:
		text = "null"
	case string:
		text = t
	case map[string]any, []any:
		b, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			text = fmt.Sprint(t)
		} else {
			text = string(b)
		}
	default:
		text = fmt.Sprint(t)
	}
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintln(w, prefix+line)
	}
}
