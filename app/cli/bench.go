package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/bench"
	"github.com/warden-dev/warden/app/store/backend"
)

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Warden on this machine",
	}
	var o bench.Options
	gw := &cobra.Command{
		Use:   "gateway",
		Short: "Drive a loopback REST tool directly and through the tool gateway; print calls/s and p50/p99 of both",
		Long: `Gateway starts a private Warden (control plane and tool gateway) on the store
given by --store (default: a fresh SQLite file), a loopback REST tool, and an
agent whose every call is authenticated with a workload token, decided by
--rules policy rules (none fires: allow), deduplicated and durably recorded as
a ToolCall. It then runs four phases of --duration each: the tool called
directly and through the gateway, first at --rate calls per second (latency
measured from each call's scheduled start), then at saturation with
--concurrency closed-loop callers, and prints the difference
(--fixed-rate-only: the first two phases alone).

Like up, it tunes the Go runtime unless GOGC, GOMAXPROCS or
WARDEN_GC_HEAP_FLOOR say otherwise: the garbage collector's target at 400,
its heap goal at least 256 MiB, and on the embedded store one processor more
than the machine has cores (docs/operations.md).

A given store must be fresh, a database of its own: the benchmark writes to it,
and refuses one that already holds an installation.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuned, err := tuneRuntime(a.env.LookupEnv, o.Store == "" || backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			fmt.Fprintf(a.env.Stdout, "runtime: %s\n", tuned)
			_, err = bench.RunGateway(cmd.Context(), o, a.env.Stdout)
			return err
		},
	}
	f := gw.Flags()
	f.StringVar(&o.Store, "store", "", "store URL (default a temporary SQLite file)")
	f.IntVar(&o.Rate, "rate", 1000, "calls per second of the fixed-rate phases")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each phase")
	f.IntVar(&o.Concurrency, "concurrency", 64, "closed-loop callers of the saturation phases")
	f.IntVar(&o.Rules, "rules", 20, "policy rules evaluated on every call")
	f.BoolVar(&o.Steps, "steps", false, "trace the gateway's fixed-rate phase and print the p50/p99/max of each step (costs a little latency)")
	f.StringVar(&o.Trace, "trace", "", "write a Go execution trace of the gateway's fixed-rate phase to this file (go tool trace)")
	f.BoolVar(&o.FixedRateOnly, "fixed-rate-only", false, "run the two fixed-rate phases only (latency, not throughput)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the gateway's saturation phase to this file (go tool pprof)")
	cmd.AddCommand(gw, newBenchMCPCmd(a))
	return cmd
}

func newBenchMCPCmd(a *app) *cobra.Command {
	var o bench.Options
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Call a read-only MCP echo tool directly and through the MCP gateway's per-agent endpoint; print calls/s, p50/p99 and CPU per call",
		Long: `Mcp starts a private Warden (control plane, tool gateway and MCP gateway) on the store
given by --store (default: a fresh SQLite file) and a loopback MCP server (Go SDK,
streamable HTTP) with one read-only tool, echo. An MCP client (Go SDK) calls
tools/call of echo directly and through /mcp as an agent, every call authenticated,
governed by the tool gateway's nine steps and recorded as a ToolCall: at --rate
calls per second, then at saturation with --concurrency callers, and prints the
added latency and the gateway's CPU per call (client, gateway and server share
the process; the direct phase's CPU is subtracted).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuned, err := tuneRuntime(a.env.LookupEnv, o.Store == "" || backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			fmt.Fprintf(a.env.Stdout, "runtime: %s\n", tuned)
			_, err = bench.RunMCP(cmd.Context(), o, a.env.Stdout)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "store URL (default a temporary SQLite file)")
	f.IntVar(&o.Rate, "rate", 500, "calls per second of the fixed-rate phases")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each phase")
	f.IntVar(&o.Concurrency, "concurrency", 64, "closed-loop callers of the saturation phases")
	f.IntVar(&o.Rules, "rules", 20, "policy rules evaluated on every call")
	f.BoolVar(&o.FixedRateOnly, "fixed-rate-only", false, "run the two fixed-rate phases only (latency, not throughput)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the gateway's saturation phase to this file (go tool pprof)")
	return cmd
}
