package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/execution"
)

func newRunCmd(a *app) *cobra.Command {
	var env string
	var follow bool
	cmd := &cobra.Command{
		Use:   "run AGENT PROMPT",
		Short: "Run an agent: create an execution and follow its events",
		Long: `Run creates an Execution of AGENT with PROMPT as its input and, with --follow (the
default), prints its events as they happen until it ends: the model calls, the tool calls
the gateway governs, approvals it waits for, and the outcome. The exit code is 0 when the
execution succeeds and 1 when it fails or is cancelled. With --follow=false it prints the
execution's name and returns; follow it later with 'warden executions events NAME --follow'.`,
		Example: `  warden run support-bot "Refund order 1234"
  warden run support-bot "Summarize ticket 7" --env staging
  warden run support-bot "Nightly report" --follow=false`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			obj, err := c.ExecutionCreate(cmd.Context(), conn.Namespace, execution.CreateRequest{Agent: args[0], Prompt: args[1], Environment: env})
			if err != nil {
				return err
			}
			name := obj.Metadata.Name
			fmt.Fprintf(a.env.Stdout, "execution/%s created\n", name)
			if !follow {
				return nil
			}
			return a.followExecution(cmd, c, conn.Namespace, name)
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVar(&env, "env", "", "environment to run in (default: the only one the agent is deployed to)")
	cmd.Flags().BoolVar(&follow, "follow", true, "print the execution's events until it ends")
	return cmd
}

// followExecution prints an execution's events until its end, then its
// answer or error; a run that did not succeed exits 1.
func (a *app) followExecution(cmd *cobra.Command, c *client.Client, ns, name string) error {
	err := c.ExecutionEvents(cmd.Context(), ns, name, 0, true, func(ev events.Event) error {
		printEvent(a.env.Stdout, ev)
		return nil
	})
	if err != nil {
		return err
	}
	o, err := c.Get(cmd.Context(), "executions", ns, name)
	if err != nil {
		return err
	}
	phase, _ := o.Status["phase"].(string)
	if phase == execution.PhaseSucceeded {
		if out, ok := o.Status["output"].(map[string]any); ok {
			fmt.Fprintf(a.env.Stdout, "\n%v\n", out["answer"])
		}
		return nil
	}
	msg, _ := o.Status["error"].(string)
	return &exitError{code: ExitFailure, msg: fmt.Sprintf("execution %s %s: %s", name, strings.ToLower(phase), msg)}
}

// printEvent writes one event as a line: time, type, then its data as
// key=value pairs in key order.
func printEvent(w io.Writer, ev events.Event) {
	keys := make([]string, 0, len(ev.Data))
	for k := range ev.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, ev.Data[k]))
	}
	fmt.Fprintf(w, "%s  %-20s %s\n", ev.Time.UTC().Format("15:04:05.000"), ev.Type, strings.Join(parts, " "))
}

func newExecutionsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "executions",
		Aliases: []string{"execution"},
		Short:   "Follow, cancel and replay executions",
		Long: `Executions are runs of agents ('warden run'). List them with 'warden get executions'
(--agent, --phase, --since), show one with 'warden describe execution NAME', and use these
subcommands to read its event log, cancel it or replay its tool calls.`,
	}
	cmd.AddCommand(newExecutionsEventsCmd(a), newExecutionsCancelCmd(a), newExecutionsReplayCmd(a))
	return cmd
}

func newExecutionsEventsCmd(a *app) *cobra.Command {
	var follow bool
	var after int64
	cmd := &cobra.Command{
		Use:   "events NAME",
		Short: "Print an execution's event log",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			return c.ExecutionEvents(cmd.Context(), conn.Namespace, args[0], after, follow, func(ev events.Event) error {
				printEvent(a.env.Stdout, ev)
				return nil
			})
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events until the execution ends")
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this sequence number (resume)")
	return cmd
}

func newExecutionsCancelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel an unfinished execution",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			if _, err := c.ExecutionCancel(cmd.Context(), conn.Namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, "execution/%s cancelled\n", args[0])
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	return cmd
}

func newExecutionsReplayCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "replay NAME",
		Short: "Replay a finished execution's tool calls through the gateway",
		Long: `Replay sends every tool call the execution made through the tool gateway again, in
order. Without --force the gateway's idempotency answers each with its recorded result and no
tool runs again; with --force each call re-executes where a policy of the agent allows it
(idempotency.allowForce), and is denied otherwise.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.ExecutionReplay(cmd.Context(), conn.Namespace, args[0], force)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(res.Items))
			for _, it := range res.Items {
				rows = append(rows, []string{it.ToolCall, it.Tool, it.Replay, fmt.Sprint(it.Deduplicated), it.Phase, it.Error})
			}
			t := &table{w: a.env.Stdout}
			t.print([]string{"TOOL-CALL", "TOOL", "REPLAY", "DEDUPLICATED", "PHASE", "ERROR"}, rows)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "re-execute every call where policy allows force")
	return cmd
}

func newPromoteCmd(a *app) *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "promote AGENT --from ENV --to ENV",
		Short: "Promote an agent to the next environment (dev → staging → prod)",
		Long: `Promote creates or updates the agent's Deployment to --to through the apply pipeline,
so the policy preflight of that environment applies: a model or tool a policy denies there
is refused with PolicyDenied and nothing is written.`,
		Example: `  warden promote support-bot --from dev --to staging`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return usagef("--from and --to are required")
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.Promote(cmd.Context(), execution.PromoteRequest{Agent: args[0], Namespace: conn.Namespace, From: from, To: to})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, "agent/%s promoted from %s to %s: deployment/%s runs %s\n", res.Agent, res.From, res.To, res.Deployment, res.Manifest)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the environment the agent is deployed to")
	cmd.Flags().StringVar(&to, "to", "", "the environment to promote it to")
	return cmd
}
