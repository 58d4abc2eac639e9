package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/resource"
)

func newApprovalsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "approvals",
		Aliases: []string{"approval"},
		Short:   "List pending approvals and decide them",
		Long: `A tool call that needs a person's approval pauses (phase AwaitingApproval, HTTP 202
at the gateway) on an Approval named like the call: ap-<suffix> for tc-<suffix>. List
them with 'approvals ls' and decide with 'approvals decide'; an approval decides once,
and an approved call then runs exactly once. 'approvals override' is the audited
break-glass path: it needs the breakglass role and a reason.`,
	}
	cmd.AddCommand(newApprovalsLsCmd(a), newApprovalsDecideCmd(a, false), newApprovalsDecideCmd(a, true))
	return cmd
}

type approvalsLsOptions struct {
	status string
	agent  string
	tool   string
	since  string
	output string
}

func newApprovalsLsCmd(a *app) *cobra.Command {
	var o approvalsLsOptions
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List approvals, pending ones by default",
		Example: `  warden approvals ls
  warden approvals ls --status all --agent support-bot -o wide
  warden approvals ls -n support -o json`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			switch o.status {
			case "all", resource.ApprovalPending, resource.ApprovalApproved, resource.ApprovalDenied, resource.ApprovalExpired, resource.ApprovalOverridden:
			default:
				return usagef("unknown --status %q: use pending, approved, denied, expired, overridden or all", o.status)
			}
			if err := checkSince(o.since); err != nil {
				return err
			}
			return a.approvalsLs(cmd.Context(), o)
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&o.status, "status", resource.ApprovalPending, "pending, approved, denied, expired, overridden or all")
	f.StringVar(&o.agent, "agent", "", "only the approvals of this agent's calls")
	f.StringVar(&o.tool, "tool", "", "only the approvals of this tool")
	f.StringVar(&o.since, "since", "", "only approvals created after this (a duration such as 1h, or an RFC 3339 time)")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table, wide, json or yaml")
	return cmd
}

func (a *app) approvalsLs(ctx context.Context, o approvalsLsOptions) error {
	c, conn, err := a.connect()
	if err != nil {
		return err
	}
	opts := client.ApprovalListOptions{Agent: o.agent, Tool: o.tool, Since: o.since}
	if o.status != "all" {
		opts.Status = o.status
	}
	list, err := c.ApprovalListAll(ctx, conn.Namespace, opts)
	if err != nil {
		return err
	}
	switch o.output {
	case outJSON, outYAML:
		out := &api.List{APIVersion: resource.GroupVersion, Kind: resource.KindApproval + "List", Items: list.Items}
		out.Metadata.ResourceVersion = list.Metadata.ResourceVersion
		if o.output == outJSON {
			return writeJSON(a.env.Stdout, out)
		}
		return writeYAML(a.env.Stdout, out)
	}
	if len(list.Items) == 0 {
		what := "approvals"
		if opts.Status != "" {
			what = opts.Status + " approvals"
		}
		fmt.Fprintf(a.env.Stderr, "No %s found in namespace %s.\n", what, conn.Namespace)
		return nil
	}
	now := a.env.Now()
	wide := o.output == outWide
	header := []string{"NAME", "TOOL-CALL", "AGENT", "TOOL", "SIDE-EFFECT", "STATUS", "REASON", "EXPIRES", "AGE"}
	if wide {
		header = append(header, "DECIDED-BY", "RATIONALE")
	}
	rows := make([][]string, 0, len(list.Items))
	for _, it := range list.Items {
		ap, err := client.DecodeApproval(it)
		if err != nil {
			return err
		}
		reason := ap.Spec.Reason
		if !wide {
			reason = prefix(reason, 60)
		}
		row := []string{ap.Name(), orDash(ap.Spec.ToolCallRef.Name), orDash(ap.Spec.AgentRef.Name), orDash(ap.Spec.ToolRef.Name),
			orDash(ap.Spec.SideEffect), orDash(ap.Status.Status), orDash(reason), expiresIn(ap, now), age(it.Metadata.CreationTimestamp, now)}
		if wide {
			row = append(row, orDash(ap.Status.DecidedBy), orDash(ap.Status.Rationale))
		}
		rows = append(rows, row)
	}
	(&table{w: a.env.Stdout}).print(header, rows)
	return nil
}

// expiresIn renders when a pending approval expires: "in 23h", "expired";
// "-" once decided.
func expiresIn(ap *client.Approval, now time.Time) string {
	if ap.Status.Status != resource.ApprovalPending || ap.Spec.ExpiresAt == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, ap.Spec.ExpiresAt)
	if err != nil {
		return "<unknown>"
	}
	if !now.Before(t) {
		return "expired"
	}
	// age renders the time from a point to now; turned around, it is the
	// time from now to the expiry.
	return "in " + age(now.Format(time.RFC3339Nano), t)
}

type decideOptions struct {
	id       string
	decision string
	reason   string
	output   string
}

func newApprovalsDecideCmd(a *app, override bool) *cobra.Command {
	var o decideOptions
	cmd := &cobra.Command{
		Use:   "decide [ID]",
		Short: "Approve or deny a pending approval",
		Long: `decide records your decision on a pending approval. Approving resumes the paused tool
call, which then runs exactly once; denying ends it as Denied. A decision is final: deciding
again answers Conflict (exit code 7). ID is the approval's name (ap-…, the NAME column of
'warden approvals ls'); the name of its tool call (tc-…) is accepted too.

With a namespace (-n, WARDEN_NAMESPACE or the context's), the decision goes to that
namespace; without one, the server finds the approval in the namespaces your credential
reaches.`,
		Example: `  warden approvals decide --id ap-01k… --decision approve --reason "customer verified"
  warden approvals decide ap-01k… --decision deny --reason "not eligible" -n support`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(cmd, args, override); err != nil {
				return err
			}
			return a.decide(cmd.Context(), o, override)
		},
	}
	if override {
		cmd.Use = "override [ID]"
		cmd.Short = "Break-glass: decide an approval as an emergency override (needs the breakglass role)"
		cmd.Long = `override decides a pending approval on the break-glass path: it needs the breakglass
role (bound in a RoleBinding; no API key is minted with it) and a reason, records the
approval as overridden, and writes an audit record of its own (verb approvals/override).
The server finds the approval among the namespaces your credential reaches.`
		cmd.Example = `  warden approvals override --id ap-01k… --decision approve --reason "INC-4711: refunds stuck"`
	} else {
		a.addNamespaceFlag(cmd)
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", "", "the approval (ap-…) or its tool call (tc-…)")
	f.StringVar(&o.decision, "decision", "", "approve or deny (required)")
	reasonHelp := "why; recorded as the decision's rationale"
	if override {
		reasonHelp += " (required)"
	}
	f.StringVar(&o.reason, "reason", "", reasonHelp)
	f.StringVarP(&o.output, "output", "o", "", "output format: empty (a message) or json")
	return cmd
}

func (o *decideOptions) check(cmd *cobra.Command, args []string, override bool) error {
	switch {
	case len(args) == 1 && o.id != "" && args[0] != o.id:
		return usagef("%s: give the approval either as an argument or with --id, not both", cmd.CommandPath())
	case len(args) == 1:
		o.id = args[0]
	case o.id == "":
		return usagef("%s: --id is required", cmd.CommandPath())
	}
	if strings.HasPrefix(o.id, "tc-") {
		o.id = client.ApprovalName(o.id)
	}
	if o.decision != api.DecisionApprove && o.decision != api.DecisionDeny {
		return usagef("%s: --decision must be approve or deny, not %q", cmd.CommandPath(), o.decision)
	}
	if override && strings.TrimSpace(o.reason) == "" {
		return usagef("%s: --reason is required: a break-glass override must say why", cmd.CommandPath())
	}
	if o.output != "" && o.output != outJSON {
		return usagef("unknown output format %q: want json", o.output)
	}
	return nil
}

func (a *app) decide(ctx context.Context, o decideOptions, override bool) error {
	c, conn, err := a.connect()
	if err != nil {
		return err
	}
	req := api.DecideRequest{Decision: o.decision, Rationale: o.reason}
	var ap *client.Approval
	if override {
		ap, err = c.ApprovalOverride(ctx, o.id, req)
	} else {
		ns := ""
		if a.namespaceChosen(conn) {
			ns = conn.Namespace
		}
		ap, err = c.ApprovalDecide(ctx, ns, o.id, req)
	}
	if err != nil {
		return err
	}
	if o.output == outJSON {
		return writeJSON(a.env.Stdout, ap.Object)
	}
	verb := map[string]string{api.DecisionApprove: "approved", api.DecisionDeny: "denied"}[o.decision]
	if override {
		verb += " (break-glass override)"
	}
	msg := fmt.Sprintf("approval %s %s by %s", ap.Name(), verb, orNone(ap.Status.DecidedBy))
	if call := ap.Spec.ToolCallRef.Name; call != "" {
		if o.decision == api.DecisionApprove {
			msg += "; tool call " + call + " resumes"
		} else {
			msg += "; tool call " + call + " is denied"
		}
	}
	_, err = fmt.Fprintln(a.env.Stdout, msg)
	return err
}

// namespaceChosen reports whether a namespace was named by -n,
// WARDEN_NAMESPACE or the current context, rather than defaulted.
func (a *app) namespaceChosen(conn clientconfig.Resolved) bool {
	if a.namespace != "" {
		return true
	}
	if v, ok := a.env.LookupEnv(clientconfig.EnvNamespace); ok && v != "" {
		return true
	}
	if conn.Context == "" {
		return false
	}
	home, err := clientconfig.Home(a.env.LookupEnv)
	if err != nil {
		return false
	}
	cfg, err := clientconfig.Load(home)
	if err != nil {
		return false
	}
	ctx, ok := cfg.Context(conn.Context)
	return ok && ctx.Namespace != ""
}
