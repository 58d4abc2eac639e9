package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newDeleteCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "delete KIND NAME [NAME...]",
		Short:   "Delete resources by name",
		Example: `  warden delete tool zendesk.reply -n support`,
		Args:    wrapArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := lookupKind(args[0])
			if err != nil {
				return err
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			for _, name := range args[1:] {
				if err := c.Delete(cmd.Context(), k.Plural, conn.Namespace, name); err != nil {
					return err
				}
				ns := ""
				if k.Namespaced {
					ns = conn.Namespace
				}
				fmt.Fprintf(a.env.Stdout, "%s deleted\n", describeRef(k.Kind, ns, name))
			}
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	return cmd
}
