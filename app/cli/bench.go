package cli

import (
	"fmt"
	"strings"
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
its heap goal at least 256 MiB, and on the embedded store with two cores or
more one processor more than the machine has cores (docs/operations.md).

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
	cmd.AddCommand(gw, newBenchMCPCmd(a), newBenchMCPServeCmd(a), newBenchSoakCmd(a), newBenchOTLPCmd(a), newBenchRouterCmd(a))
	return cmd
}

func newBenchMCPCmd(a *app) *cobra.Command {
	var o bench.MCPOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Call a read-only MCP echo tool directly and through the MCP gateway's per-agent endpoint; print calls/s, p50/p99 and CPU per call",
		Long: `Mcp starts a private Warden (control plane, tool gateway and MCP gateway) on the store
given by --store (default: a fresh SQLite file) and a loopback MCP server (Go SDK,
streamable HTTP) with one read-only tool, echo. An MCP client calls tools/call of
echo directly and through /mcp as an agent, every call authenticated,
governed by the tool gateway's nine steps and recorded as a ToolCall: at --rate
calls per second, then at saturation with --concurrency callers, and prints the
added latency and the gateway's CPU per call. With --layout split (default) the
gateway and the echo server run in a process of their own pinned to one CPU,
the client in this one on the other CPUs, and the gateway's CPU per call is the
serving process's, the direct phase's subtracted; --layout shared runs all three
in this process on every CPU. Both sessions are opened with the Go SDK's client;
--client lean (default) then posts each tools/call on the session itself, so
that the load generator costs little, and --client sdk calls through the SDK's
client session.`,
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
	f.StringVar(&o.Trace, "trace", "", "write an execution trace of the gateway's fixed-rate phase to this file (go tool trace)")
	f.StringVar(&o.Client, "client", bench.MCPClientLean, "MCP client of both phases: lean (one POST on the session a call) or sdk (the Go SDK's client)")
	f.StringVar(&o.Layout, "layout", bench.MCPLayoutSplit, "split: gateway and echo server in a process pinned to one CPU, the client on the others; shared: all in this process")
	return cmd
}

// newBenchMCPServeCmd is the serving process of `warden bench mcp
// --layout split`, which runs it; not for people.
func newBenchMCPServeCmd(a *app) *cobra.Command {
	var o bench.MCPServeOptions
	cmd := &cobra.Command{
		Use:    "mcp-serve",
		Short:  "The serving process of `warden bench mcp` (started by it)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			restore, err := bench.PinCPUs(1)
			if err != nil {
				return err
			}
			defer restore()
			// Tuned as `warden up` is on a machine of one core.
			tuned, err := tuneRuntime(a.env.LookupEnv, backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			return bench.ServeMCP(cmd.Context(), o, a.env.Stdin, a.env.Stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "store URL of a fresh installation")
	f.IntVar(&o.Rules, "rules", 20, "policy rules evaluated on every call")
	return cmd
}

func newBenchSoakCmd(a *app) *cobra.Command {
	var o bench.SoakOptions
	soak := &cobra.Command{
		Use:   "soak",
		Short: "Drive governed calls for a long time and print the store's size as retention holds it level",
		Long: `Soak starts a private Warden on the store given by --store (default: a fresh
SQLite file) whose tenant keeps tool calls, events and audit records for
--retention (spec.retention of the Tenant resource), drives governed calls
through the tool gateway at --rate calls per second for --duration, and prints
every --every the calls made, the store's size, the part of it in use and the
bytes in use per call so far; at the end, the size of each table.

A finished ToolCall also waits for its idempotency window (10 minutes by
default) and a minute, so the size levels off after about 11 minutes.
Without retention it would grow by the bytes a call leaves, for ever.

On Postgres the space of deleted rows is reused once they are vacuumed: leave
it to autovacuum, or give --vacuum for a server that has it off.

A given store must be fresh, a database of its own.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuned, err := tuneRuntime(a.env.LookupEnv, o.Store == "" || backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			fmt.Fprintf(a.env.Stdout, "runtime: %s\n", tuned)
			_, err = bench.RunSoak(cmd.Context(), o, a.env.Stdout)
			return err
		},
	}
	f := soak.Flags()
	f.StringVar(&o.Store, "store", "", "store URL (default a temporary SQLite file)")
	f.IntVar(&o.Rate, "rate", 200, "governed calls per second")
	f.DurationVar(&o.Duration, "duration", 15*time.Minute, "how long the calls go on")
	f.DurationVar(&o.Every, "every", 30*time.Second, "how often the store's size is printed")
	f.DurationVar(&o.Retention, "retention", time.Minute, "the tenant's retention of tool calls, events and audit records")
	f.DurationVar(&o.Vacuum, "vacuum", 0, "on Postgres, run VACUUM this often (for a server whose autovacuum is off)")
	return soak
}

func newBenchOTLPCmd(a *app) *cobra.Command {
	var o bench.OTLPOptions
	cmd := &cobra.Command{
		Use:   "otlp",
		Short: "Measure the trace service: OTLP/gRPC ingest in spans/s, GET /v1/traces/{id}, and toolcalls top's queries",
		Long: `Otlp starts a private trace service on the store given by --store (default: a
fresh SQLite file) and sends it agent traces (an agent run, four tool calls and
three model calls each) over OTLP/gRPC from --senders concurrent senders, in
exports of --batch spans, for --duration; every export is acknowledged only
once its spans are committed. It then times GET /v1/traces/{id} of a trace of
--trace-spans spans, and the four metrics queries of 'warden toolcalls top'
over everything ingested. The runtime is tuned as for up.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuned, err := tuneRuntime(a.env.LookupEnv, o.Store == "" || backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			fmt.Fprintf(a.env.Stdout, "runtime: %s\n", tuned)
			_, err = bench.RunOTLP(cmd.Context(), o, a.env.Stdout)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "store URL (default a temporary SQLite file); a given store must be fresh")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "length of the ingest phase")
	f.IntVar(&o.Senders, "senders", 4, "concurrent OTLP/gRPC senders")
	f.IntVar(&o.Batch, "batch", 512, "spans of one export")
	f.IntVar(&o.TraceSpans, "trace-spans", 1000, "spans of the trace GET /v1/traces/{id} reads")
	f.IntVar(&o.Reads, "reads", 200, "times each query is timed")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	return cmd
}

func newBenchRouterCmd(a *app) *cobra.Command {
	var o bench.RouterOptions
	var child bool
	cmd := &cobra.Command{
		Use:   "router",
		Short: "Send chat completions to a local provider directly and through the model router; print the added latency and calls/s",
		Long: `Router starts a private Warden with the model router on the store given by
--store (default: a fresh SQLite file), a local OpenAI-compatible provider, and
an agent routed to it (every call authenticated with a workload token, routed,
decided by policy, priced and recorded). It then sends the same non-streamed
chat completion directly and through the router in the same run: at --low-rate
calls per second (added p50), at --high-rate (added p99), at saturation with
--concurrency closed-loop callers (calls/s), and a streamed answer at
--stream-rate (added time to the first chunk); --phases runs only some of
those pairs. The provider and the router
run in a child process pinned to the first --cpus CPUs (0: unpinned), sized
as up sizes itself in a container of that many CPUs unless GOGC, GOMAXPROCS
or WARDEN_GC_HEAP_FLOOR say otherwise (the collector's target and heap floor,
and on the embedded store with two CPUs or more one processor more than its CPUs;
docs/operations.md); the load generator runs in this process on the CPUs
left. The CPU per call is the child's. Before the measured phases, each
process is warmed by closed-loop callers until it has collected twice, so
that its heap has grown to the goal it serves at (at most 30 s).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.CheckPhases(); err != nil {
				return usagef("%v", err)
			}
			if !child {
				// The load generator collects as rarely as the server
				// does, so that its collector delays the calls it times
				// less (RunRouter then sizes GOMAXPROCS for its CPUs).
				tuned, err := tuneRuntime(a.env.LookupEnv, false)
				if err != nil {
					return err
				}
				defer tuned.stop()
				o.ChildArgs = []string{"bench", "router", "--serve-child"}
				_, err = bench.RunRouter(cmd.Context(), o, a.env.Stdout)
				return err
			}
			if o.CPUs > 0 {
				restore, err := bench.PinCPUs(o.CPUs)
				if err != nil {
					return err
				}
				defer restore()
			}
			tuned, err := tuneRuntime(a.env.LookupEnv, o.Store == "" || backend.Embedded(o.Store))
			if err != nil {
				return err
			}
			defer tuned.stop()
			return bench.ServeRouterChild(cmd.Context(), o, a.env.Stdin, a.env.Stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "store URL (default a temporary SQLite file)")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each phase")
	f.IntVar(&o.LowRate, "low-rate", 500, "calls per second of the phases that give the added p50")
	f.IntVar(&o.HighRate, "high-rate", 2000, "calls per second of the phases that give the added p99")
	f.IntVar(&o.StreamRate, "stream-rate", 200, "streams per second of the first-chunk phases")
	f.IntVar(&o.Concurrency, "concurrency", 32, "closed-loop callers of the saturation phases")
	f.IntVar(&o.CPUs, "cpus", 1, "pin the provider and router to this many CPUs, the load generator to the others; 0: unpinned")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the router's saturation phase to this file (go tool pprof)")
	f.StringVar(&o.Trace, "trace", "", "write an execution trace of the router's --high-rate phase to this file (go tool trace)")
	f.StringSliceVar(&o.Phases, "phases", nil, "run only these pairs of phases (direct and through the router): "+strings.Join(bench.RouterPhases, ", ")+" (default all)")
	f.BoolVar(&child, "serve-child", false, "serve the provider and router for the load generator (internal)")
	_ = f.MarkHidden("serve-child")
	return cmd
}
