package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/clientconfig"
)

// app is the state one command run shares between its commands: the
// injected environment and the values of the global flags.
type app struct {
	env       Env
	server    string
	token     string
	context   string
	namespace string
	// mcpPort is up's --mcp-port.
	mcpPort int
	// memoryPort is up's --memory-port.
	memoryPort int
}

func newRootCmd(env Env) *cobra.Command {
	a := &app{env: env}
	root := &cobra.Command{
		Use:   "warden",
		Short: "Warden: control plane and tool gateway for AI agent fleets",
		Long: `Warden manages a fleet of AI agents declaratively: apply Agents, Models, Tools and
Policies as YAML, and Warden validates them, stores them and compiles each Agent into a
CompiledAgentManifest.

Connection settings come from --server/--token, then WARDEN_SERVER/WARDEN_TOKEN, then the
current context of $WARDEN_HOME/config.yaml (written by 'warden up').`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for \"warden\"", args[0])
			}
			return cmd.Help()
		},
	}
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	root.CompletionOptions.DisableDefaultCmd = true

	pf := root.PersistentFlags()
	pf.StringVar(&a.server, "server", "", "control plane address (overrides WARDEN_SERVER and the config file)")
	pf.StringVar(&a.token, "token", "", "bearer token (overrides WARDEN_TOKEN and the config file)")
	pf.StringVar(&a.context, "context", "", "config file context to use instead of the current one")

	root.AddCommand(
		newUpCmd(a),
		newServeCmd(a),
		newApplyCmd(a),
		newValidateCmd(a),
		newDiffCmd(a),
		newGetCmd(a),
		newDescribeCmd(a),
		newDeleteCmd(a),
		newAuditCmd(a),
		newSecretsCmd(a),
		newTokenCmd(a),
		newAPIKeysCmd(a),
		newMembersCmd(a),
		newBenchCmd(a),
		newToolCallsCmd(a),
		newTracesCmd(a),
		newApprovalsCmd(a),
		newAgBOMCmd(a),
		newRAGCmd(a),
		newRunCmd(a),
		newExecutionsCmd(a),
		newPromoteCmd(a),
		newEvalCmd(a),
		newMemoryCmd(a),
		newDemoCmd(a),
		newModelsCmd(a),
		newRouteCmd(a),
		newVersionCmd(a),
		newMCPCmd(a),
	)
	return root
}

// addNamespaceFlag registers -n/--namespace on cmd.
func (a *app) addNamespaceFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&a.namespace, "namespace", "n", "", "namespace (default: the context's namespace, else \"default\")")
}

// connect resolves the connection settings and returns a client.
func (a *app) connect() (*client.Client, clientconfig.Resolved, error) {
	home, err := clientconfig.Home(a.env.LookupEnv)
	if err != nil {
		return nil, clientconfig.Resolved{}, err
	}
	cfg, err := clientconfig.Load(home)
	if err != nil {
		return nil, clientconfig.Resolved{}, fmt.Errorf("load config: %w", err)
	}
	res, err := clientconfig.Resolve(cfg, clientconfig.Overrides{
		Server: a.server, Token: a.token, Namespace: a.namespace, Context: a.context,
	}, a.env.LookupEnv)
	if err != nil {
		return nil, clientconfig.Resolved{}, err
	}
	return client.New(res.Server, res.Token, client.WithUserAgent("warden-cli")), res, nil
}

// exactArgs is cobra.ExactArgs whose failure is a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return wrapArgs(cobra.ExactArgs(n))
}

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return wrapArgs(cobra.RangeArgs(lo, hi))
}

func wrapArgs(f cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			return &usageError{err: fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
		}
		return nil
	}
}
