package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
)

func newAuditCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read and verify the tenant's tamper-evident audit log",
	}
	cmd.AddCommand(newAuditLsCmd(a), newAuditVerifyCmd(a))
	return cmd
}

func newAuditLsCmd(a *app) *cobra.Command {
	var opts client.AuditListOptions
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List audit records, oldest first",
		Example: `  warden audit ls --since 1h
  warden audit ls --actor apikey:admin --verb apply -o json`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return usagef("-o must be table, json or yaml, not %q", output)
			}
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			var recs []any
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			if output == "table" {
				fmt.Fprintln(tw, "SEQ\tTIME\tACTOR\tVERB\tNAMESPACE\tRESOURCE\tOUTCOME\tPOLICY")
			}
			for {
				page, err := c.AuditList(cmd.Context(), opts)
				if err != nil {
					return err
				}
				for _, r := range page.Items {
					if output != "table" {
						recs = append(recs, r)
						continue
					}
					outcome := r.Outcome
					if r.Reason != "" {
						outcome += " (" + r.Reason + ")"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.UTC().Format(time.RFC3339),
						r.Actor, r.Verb, dash(r.Namespace), dash(r.Resource), outcome, dash(r.Policy))
				}
				if page.Next == "" || !all {
					break
				}
				if opts.After, err = strconv.ParseInt(page.Next, 10, 64); err != nil {
					return fmt.Errorf("server returned a bad page token %q", page.Next)
				}
			}
			switch output {
			case "json":
				return writeJSON(a.env.Stdout, recs)
			case "yaml":
				return writeYAML(a.env.Stdout, recs)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Actor, "actor", "", "only records of this actor, e.g. apikey:admin")
	f.StringVar(&opts.Verb, "verb", "", "only records of this verb, e.g. apply")
	f.StringVarP(&opts.Namespace, "namespace", "n", "", "only records in this namespace")
	f.StringVar(&opts.Since, "since", "", "only records newer than this (RFC 3339 time or a duration such as 1h)")
	f.IntVar(&opts.Limit, "limit", 100, "records per page")
	f.BoolVarP(&all, "all", "A", false, "follow every page")
	f.StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func newAuditVerifyCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Walk the whole audit chain and report any changed, removed or reordered record",
		Long: `verify asks the server to recompute the hash chain of the tenant's audit log.
It exits 0 when the chain holds and 1 when any record was changed, removed or
reordered, printing each problem.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := a.connect()
			if err != nil {
				return err
			}
			rep, err := c.AuditVerify(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				if err := writeJSON(a.env.Stdout, rep); err != nil {
					return err
				}
			} else {
				if cp := rep.Checkpoint; cp != nil {
					fmt.Fprintf(a.env.Stdout, "records up to %d were removed by retention at %s; the chain starts from their sealed checkpoint\n",
						cp.Seq, cp.CutAt.Format(time.RFC3339))
				}
				if rep.OK {
					fmt.Fprintf(a.env.Stdout, "audit chain intact: %d records verified\n", rep.Records)
				} else {
					fmt.Fprintf(a.env.Stdout, "audit chain BROKEN: %d problem(s) in %d records\n", len(rep.Problems), rep.Records)
					for _, p := range rep.Problems {
						fmt.Fprintf(a.env.Stdout, "  record %d: %s: %s\n", p.Seq, p.Kind, p.Message)
					}
				}
			}
			if !rep.OK {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
