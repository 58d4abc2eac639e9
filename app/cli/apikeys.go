package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/api"
)

func newAPIKeysCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "apikeys",
		Aliases: []string{"apikey"},
		Short:   "Create, list and revoke API keys",
		Long: `API keys (wk_…) authenticate SDKs, scripts and CI. Each is scoped to one namespace
(or "*", the whole tenant) and carries one role: viewer, editor, approver or admin. A key
bound to an agent (--agent) has role agent and is meant for the workload token exchange
(warden token). The secret is shown once, when the key is created.`,
	}
	cmd.AddCommand(newAPIKeysCreateCmd(a), newAPIKeysLsCmd(a), newAPIKeysRevokeCmd(a))
	return cmd
}

func newAPIKeysCreateCmd(a *app) *cobra.Command {
	var req api.APIKeyCreateRequest
	var output string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an API key and print its secret, once",
		Long: `create mints an API key and prints its secret on stdout; the details and a warning go
to stderr, so KEY=$(warden apikeys create ci) captures only the secret. The secret is
stored only as a hash: it cannot be shown again. -n '*' makes a tenant-wide key, which
needs a tenant-wide credential. You cannot mint a role you do not hold yourself.`,
		Example: `  warden apikeys create ci-deploy --role editor -n support --expires-in 720h
  warden apikeys create triage-bot --agent triage -n support
  warden apikeys create auditor --role viewer -n '*' -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != outJSON {
				return usagef("unknown output format %q: want json", output)
			}
			if req.Agent == "" && req.Role == "" {
				req.Role = "viewer"
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			req.Name, req.Namespace = args[0], conn.Namespace
			k, err := c.APIKeyCreate(cmd.Context(), req)
			if err != nil {
				return err
			}
			expires := "never expires"
			if k.ExpiresAt != nil {
				expires = "expires " + k.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(a.env.Stderr, "apikey %s created: id %s, role %s, namespace %s, %s\n", k.Name, k.ID, k.Role, k.Namespace, expires)
			fmt.Fprintln(a.env.Stderr, "warning: this is the only time the secret is shown; store it now, it cannot be shown again")
			if output == outJSON {
				return writeJSON(a.env.Stdout, k)
			}
			_, err = fmt.Fprintln(a.env.Stdout, k.Secret)
			return err
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&req.Role, "role", "", "role: viewer, editor, approver or admin (default viewer; agent-bound keys have role agent)")
	f.StringVar(&req.Agent, "agent", "", "bind the key to this agent of the namespace, for `warden token`")
	f.StringVar(&req.ExpiresIn, "expires-in", "", "lifetime such as 720h (default: no expiry)")
	f.StringVarP(&output, "output", "o", "", "output format: empty (the secret only) or json")
	return cmd
}

func newAPIKeysLsCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List API keys (never their secrets)",
		Long: `ls lists the keys you may see: every key of the tenant with a tenant-wide admin
credential, otherwise those of the namespaces where you may manage keys. -n limits the
list to one namespace ('*' lists the tenant-wide keys).`,
		Example: `  warden apikeys ls
  warden apikeys ls -n support -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outTable && output != outJSON && output != outYAML {
				return usagef("unknown output format %q: use table, json or yaml", output)
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			ns := ""
			if cmd.Flags().Changed("namespace") {
				ns = conn.Namespace
			}
			list, err := c.APIKeyList(cmd.Context(), ns)
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
			fmt.Fprintln(tw, "ID\tNAME\tNAMESPACE\tROLE\tAGENT\tSTATUS\tAGE\tEXPIRES\tLAST-USED")
			for _, k := range list.Items {
				status := "active"
				switch {
				case k.RevokedAt != nil:
					status = "revoked"
				case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
					status = "expired"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Namespace, k.Role, dash(k.Agent), status,
					age(k.CreatedAt.Format(time.RFC3339), now), timeOrDash(k.ExpiresAt), timeOrDash(k.LastUsedAt))
			}
			return tw.Flush()
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	return cmd
}

func newAPIKeysRevokeCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke an API key; it stops working at once",
		Example: `  warden apikeys revoke 3f2a…   # the ID column of warden apikeys ls`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != outJSON {
				return usagef("unknown output format %q: want json", output)
			}
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			k, err := c.APIKeyRevoke(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, k)
			}
			_, err = fmt.Fprintf(a.env.Stdout, "apikey %s (%s) revoked\n", k.Name, k.ID)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: empty (a message) or json")
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
