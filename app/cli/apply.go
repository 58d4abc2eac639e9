package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newApplyCmd(a *app) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update resources from YAML or JSON, all or nothing",
		Example: `  warden apply -f examples/fleet/
  cat agent.yaml | warden apply -f -`,
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
			res, err := c.Apply(cmd.Context(), b.body)
			if err != nil {
				return explainRejection(a.env.Stderr, err, b)
			}
			w := a.env.Stdout
			for _, it := range res.Items {
				fmt.Fprintf(w, "%s %s\n", describeRef(it.Kind, it.Namespace, it.Name), it.Action)
			}
			// The API lists every manifest the apply compiled, new or
			// already stored (an unchanged agent recompiles to the same
			// manifest), so "created" would claim too much.
			for _, m := range res.Manifests {
				fmt.Fprintf(w, "compiledagentmanifest %s compiled\n", m)
			}
			return nil
		},
	}
	addFileFlag(cmd, &files)
	return cmd
}

// describeRef renders "agent/support-bot" (with "ns/" in front outside the
// default namespace), the way kubectl names objects in its output.
func describeRef(kind, ns, name string) string {
	ref := strings.ToLower(kind) + "/" + name
	if ns != "" && ns != "default" {
		return ns + "/" + ref
	}
	return ref
}
