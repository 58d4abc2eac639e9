package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd(a *app) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR|-",
		Short: "Run admission (schema, defaults, references, policy preflight) without writing",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := readManifests(a.env.Stdin, files)
			if err != nil {
				return err
			}
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.Validate(cmd.Context(), b.body)
			if err != nil {
				return explainRejection(a.env.Stderr, err, b)
			}
			for _, it := range res.Items {
				fmt.Fprintf(a.env.Stdout, "%s valid\n", describeRef(it.Kind, it.Namespace, it.Name))
			}
			if !res.Valid {
				return &exitError{code: ExitRejected, msg: "the server reported the manifests invalid"}
			}
			return nil
		},
	}
	addFileFlag(cmd, &files)
	return cmd
}
