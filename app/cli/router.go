package cli

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
)

// envRouter overrides the model router's address.
const envRouter = "WARDEN_ROUTER"

// routerClient returns a client of the model router: --router, else
// $WARDEN_ROUTER, else the control plane's host on port 8083.
func (a *app) routerClient(flag string) (*client.Client, string, error) {
	c, res, err := a.connect()
	if err != nil {
		return nil, "", err
	}
	addr := flag
	if addr == "" {
		addr, _ = a.env.LookupEnv(envRouter)
	}
	if addr == "" {
		u, err := url.Parse(c.Server())
		if err != nil {
			return nil, "", fmt.Errorf("server address %q: %w", c.Server(), err)
		}
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(defaultRouterPort))
		addr = u.String()
	}
	return client.New(addr, res.Token, client.WithUserAgent("warden-cli")), res.Namespace, nil
}

func newModelsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "Ask the model router about Models"}
	var routerAddr, output string
	caps := &cobra.Command{
		Use:   "capabilities",
		Short: "Print the capability vector of every Model you may call (the one routing matches)",
		Long: `Capabilities asks the model router (GET /v1/models/capabilities) for the
Models the credential may call in the namespace: an agent's route, or every
Model of the namespace, with the capabilities and price that routing matches a
request against. The router's address is --router, $WARDEN_ROUTER, or the
server's host on port 8083.`,
		Example: `  warden models capabilities
  warden models capabilities -n payments -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outTable && output != outJSON && output != outYAML {
				return usagef("unknown output format %q: use table, json or yaml", output)
			}
			c, ns, err := a.routerClient(routerAddr)
			if err != nil {
				return err
			}
			list, err := c.ModelCapabilities(cmd.Context(), ns)
			if err != nil {
				return err
			}
			switch output {
			case outJSON:
				return writeJSON(a.env.Stdout, list)
			case outYAML:
				return writeYAML(a.env.Stdout, list)
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROUTE ID\tTOOLS\tSTREAM\tVISION\tJSON\tCONTEXT\tIN $/M\tOUT $/M\tUNAVAILABLE")
			for _, m := range list.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%g\t%g\t%s\n", m.Name, m.RouteID, yesNo(m.ToolUse), yesNo(m.Streaming),
					yesNo(m.Vision), yesNo(m.JSONMode), m.ContextWindow, m.InputPerMTok, m.OutputPerMTok, m.Unavailable)
			}
			return tw.Flush()
		},
	}
	caps.Flags().StringVar(&routerAddr, "router", "", "model router address (default $WARDEN_ROUTER, else the server's host on port 8083)")
	caps.Flags().StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	a.addNamespaceFlag(caps)
	cmd.AddCommand(caps)
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

func newRouteCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "route", Short: "Explain the model router's decisions"}
	var routerAddr, execution, output string
	explain := &cobra.Command{
		Use:   "explain NAME --execution ID",
		Short: "Print why each routing decision of an execution went the way it did",
		Long: `Explain reads the routing decisions the model router recorded for route NAME
(an agent whose route was followed, or a Model named by the caller) in one
execution (GET /v1/route/{name}/explain?execution=): for each model call, the
candidates in order and, for each one skipped, the capability it lacked, the
policy that denied it, the budget it would breach, or the error that made the
router switch.`,
		Example: `  warden route explain support-bot --execution ex-42
  warden route explain support-bot --execution ex-42 -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if execution == "" {
				return usagef("--execution is required")
			}
			if output != outTable && output != outJSON && output != outYAML {
				return usagef("unknown output format %q: use table, json or yaml", output)
			}
			c, ns, err := a.routerClient(routerAddr)
			if err != nil {
				return err
			}
			x, err := c.RouteExplain(cmd.Context(), ns, args[0], execution)
			if err != nil {
				return err
			}
			switch output {
			case outJSON:
				return writeJSON(a.env.Stdout, x)
			case outYAML:
				return writeYAML(a.env.Stdout, x)
			}
			w := a.env.Stdout
			for _, d := range x.Decisions {
				fmt.Fprintf(w, "%s  %s  %s %s → %s", d.Time.Format("2006-01-02T15:04:05.000Z"), d.ID, d.Operation, streamWord(d.Stream), d.Outcome)
				if d.Selected != "" {
					fmt.Fprintf(w, " by %s", d.Selected)
				}
				if d.Usage != nil {
					fmt.Fprintf(w, " (%d tokens, %.6f USD, %.1f ms)", d.Usage.TotalTokens, d.Cost, d.DurationMs)
				}
				fmt.Fprintln(w)
				if d.Error != nil {
					fmt.Fprintf(w, "    error %s: %s\n", d.Error.Code, d.Error.Message)
				}
				for i, cd := range d.Candidates {
					line := fmt.Sprintf("    %d. %-12s %-28s %s", i+1, cd.Model, cd.RouteID, cd.Outcome)
					if cd.Reason != "" {
						line += " (" + cd.Reason + ")"
					}
					if cd.Detail != "" {
						line += ": " + cd.Detail
					}
					fmt.Fprintln(w, strings.TrimRight(line, " "))
				}
				for _, warn := range d.Warnings {
					fmt.Fprintf(w, "    warning: %s\n", warn)
				}
			}
			return nil
		},
	}
	f := explain.Flags()
	f.StringVar(&execution, "execution", "", "the execution whose decisions to explain (required)")
	f.StringVar(&routerAddr, "router", "", "model router address (default $WARDEN_ROUTER, else the server's host on port 8083)")
	f.StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	a.addNamespaceFlag(explain)
	cmd.AddCommand(explain)
	return cmd
}

func streamWord(s bool) string {
	if s {
		return "(stream)"
	}
	return ""
}
