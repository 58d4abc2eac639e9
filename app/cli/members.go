package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/api"
)

func newMembersCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "members",
		Aliases: []string{"member"},
		Short:   "List the tenant's people and change their roles",
		Long: `members shows the people of your tenant, with ownership and the role each holds per
namespace, and changes a person's role, as the console's Members page does. Reading members
and granting or taking away ownership need an owner; binding a namespace role needs admin
in that namespace. The last owner cannot be demoted.`,
	}
	cmd.AddCommand(newMembersLsCmd(a), newMembersSetRoleCmd(a))
	return cmd
}

func newMembersLsCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's members and their roles",
		Example: `  warden members ls
  warden members ls -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outTable && output != outJSON && output != outYAML {
				return usagef("unknown output format %q: use table, json or yaml", output)
			}
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			list, err := c.MemberList(cmd.Context())
			if err != nil {
				return err
			}
			switch output {
			case outJSON:
				return writeJSON(a.env.Stdout, list)
			case outYAML:
				return writeYAML(a.env.Stdout, list)
			}
			now := a.env.Now()
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EMAIL\tSTATUS\tOWNER\tROLES\tAGE\tLAST-LOGIN")
			for _, m := range list.Items {
				owner := "no"
				if m.Owner {
					owner = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Email, m.Status, owner, dash(roleList(m.Roles)),
					age(m.CreatedAt.Format(time.RFC3339), now), timeOrDash(m.LastLogin))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	return cmd
}

// roleList writes roles as "admin@default,viewer@dev".
func roleList(rs []api.MemberRole) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.Role+"@"+r.Namespace)
	}
	return strings.Join(parts, ",")
}

func newMembersSetRoleCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "set-role EMAIL ROLE",
		Short: "Change a member's role: owner, or a role in one namespace",
		Long: `set-role changes an existing member's role. ROLE owner makes them an owner of the tenant
(owners only). A namespace role (viewer, approver, editor, admin) replaces their role in the
namespace of -n; given to an owner it also takes ownership away (owners only), and the last
owner cannot be demoted (409 Conflict).`,
		Example: `  warden members set-role bob@example.com approver -n payments
  warden members set-role carol@example.com owner`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != outJSON {
				return usagef("unknown output format %q: want json", output)
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			req := api.MemberRoleRequest{Role: args[1]}
			if req.Role != "owner" {
				req.Namespace = conn.Namespace
			}
			m, err := c.MemberSetRole(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, m)
			}
			if m.Owner {
				_, err = fmt.Fprintf(a.env.Stdout, "member %s is an owner of the tenant\n", m.Email)
				return err
			}
			_, err = fmt.Fprintf(a.env.Stdout, "member %s now holds %s\n", m.Email, dash(roleList(m.Roles)))
			return err
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: empty (one line) or json")
	return cmd
}
