package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/warden-dev/warden/app/execution"
)

func newEvalCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run evaluation suites against agents",
	}
	cmd.AddCommand(newEvalRunCmd(a))
	return cmd
}

func newEvalRunCmd(a *app) *cobra.Command {
	var file, agent, env string
	cmd := &cobra.Command{
		Use:   "run NAME -f SUITE.yaml",
		Short: "Run a suite of prompts as executions and report pass/fail per case",
		Long: `The suite file (YAML or JSON) names the agent and lists cases, each a prompt with the
tools the run must call and text its answer must contain:

  agent: support-bot
  environment: dev
  cases:
    - name: refund-lookup
      prompt: What is the status of refund 1234?
      expectTools: [payments.lookup]
      expectAnswer: refund

Every case runs as an Execution labelled warden.dev/eval=NAME. The exit code is 0 when every
case passes and 1 otherwise.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef("-f SUITE is required")
			}
			var b []byte
			var err error
			if file == "-" {
				b, err = io.ReadAll(a.env.Stdin)
			} else {
				b, err = os.ReadFile(file)
			}
			if err != nil {
				return fmt.Errorf("read the suite: %w", err)
			}
			var req execution.EvalRequest
			if err := yaml.UnmarshalStrict(b, &req); err != nil {
				return usagef("the suite %s is not valid: %v", file, err)
			}
			if agent != "" {
				req.Agent = agent
			}
			if env != "" {
				req.Environment = env
			}
			c, conn, err := a.connect()
			if err != nil {
				return err
			}
			if req.Namespace == "" {
				req.Namespace = conn.Namespace
			}
			res, err := c.EvalRun(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(res.Cases))
			for _, r := range res.Cases {
				verdict := "PASS"
				if !r.Passed {
					verdict = "FAIL"
				}
				rows = append(rows, []string{r.Name, verdict, r.Execution, r.Phase, strings.Join(r.Failures, "; ")})
			}
			t := &table{w: a.env.Stdout}
			t.print([]string{"CASE", "RESULT", "EXECUTION", "PHASE", "FAILURES"}, rows)
			fmt.Fprintf(a.env.Stdout, "\n%d passed, %d failed\n", res.Passed, res.Failed)
			if res.Failed > 0 {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the suite file (- for stdin)")
	cmd.Flags().StringVar(&agent, "agent", "", "run against this agent instead of the suite's")
	cmd.Flags().StringVar(&env, "env", "", "run in this environment instead of the suite's")
	a.addNamespaceFlag(cmd)
	return cmd
}
