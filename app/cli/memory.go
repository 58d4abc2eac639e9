package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/memory"
)

// envMemoryURL overrides the memory service's URL.
const envMemoryURL = "WARDEN_MEMORY_URL"

// memoryFlags are the flags every memory command shares.
type memoryFlags struct {
	url                 string
	agent, conversation string
}

func newMemoryCmd(a *app) *cobra.Command {
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Write, query, delete and summarize the items of a Memory",
		Long: `The memory service (port 8084) stores the items of Memory resources. These
commands reach it at --memory-url, else $` + envMemoryURL + `, else the control plane's
host on port 8084, with the current context's credential.`,
	}
	cmd.PersistentFlags().StringVar(&mf.url, "memory-url", "", "memory service URL (default $"+envMemoryURL+", else the server's host on port 8084)")
	cmd.PersistentFlags().StringVar(&mf.agent, "agent", "", "the agent whose items these are (agent- and conversation-scoped memories)")
	cmd.PersistentFlags().StringVar(&mf.conversation, "conversation", "", "the conversation (conversation-scoped memories)")
	cmd.AddCommand(newMemoryWriteCmd(a, &mf), newMemoryQueryCmd(a, &mf), newMemoryRmCmd(a, &mf), newMemorySummarizeCmd(a, &mf))
	return cmd
}

// memoryClient returns a client of the memory service and the namespace.
func (a *app) memoryClient(mf *memoryFlags) (*client.Client, string, error) {
	c, conn, err := a.connect()
	if err != nil {
		return nil, "", err
	}
	u := mf.url
	if u == "" {
		u, _ = a.env.LookupEnv(envMemoryURL)
	}
	if u == "" {
		if u, err = client.MemoryURL(c.Server(), defaultMemoryPort); err != nil {
			return nil, "", err
		}
	}
	return client.New(u, conn.Token, client.WithUserAgent("warden-cli")), conn.Namespace, nil
}

func (mf *memoryFlags) scope() memory.Scope {
	return memory.Scope{Agent: mf.agent, Conversation: mf.conversation}
}

func newMemoryWriteCmd(a *app, mf *memoryFlags) *cobra.Command {
	var text, meta, ttl string
	cmd := &cobra.Command{
		Use:   "write NAME [TEXT]",
		Short: "Write an item (TEXT, or standard input when TEXT is -)",
		Example: `  warden memory write notes "The customer prefers e-mail" --agent support-bot
  echo "long note" | warden memory write notes - --metadata '{"topic":"billing"}' --ttl 24h`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				text = args[1]
			}
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(a.env.Stdin, memory.MaxTextBytes+1))
				if err != nil {
					return fmt.Errorf("read standard input: %w", err)
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return usagef("give the item's text as an argument (- reads standard input)")
			}
			req := memory.WriteRequest{Text: text, Scope: mf.scope(), TTL: ttl}
			if meta != "" {
				if err := json.Unmarshal([]byte(meta), &req.Metadata); err != nil {
					return usagef("--metadata must be a JSON object: %v", err)
				}
			}
			c, ns, err := a.memoryClient(mf)
			if err != nil {
				return err
			}
			it, err := c.MemoryWrite(cmd.Context(), ns, args[0], req)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, "item %s written to memory %s", it.ID, args[0])
			if it.Redactions > 0 {
				fmt.Fprintf(a.env.Stdout, " (%d findings redacted)", it.Redactions)
			}
			fmt.Fprintln(a.env.Stdout)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVar(&meta, "metadata", "", "metadata, a JSON object")
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the item lives, e.g. 24h (the Memory's spec.ttl bounds it)")
	return cmd
}

func newMemoryQueryCmd(a *app, mf *memoryFlags) *cobra.Command {
	var req memory.QueryRequest
	var meta, output string
	cmd := &cobra.Command{
		Use:   "query NAME [TEXT]",
		Short: "Read items: ranked by relevance to TEXT, else newest first",
		Example: `  warden memory query notes "refund policy" --limit 5
  warden memory query notes --metadata '{"topic":"billing"}' --since 24h -o json`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				req.Text = args[1]
			}
			if output != "table" && output != "json" {
				return usagef("unknown -o %q: use table or json", output)
			}
			if meta != "" {
				if err := json.Unmarshal([]byte(meta), &req.Metadata); err != nil {
					return usagef("--metadata must be a JSON object: %v", err)
				}
			}
			req.Scope = mf.scope()
			c, ns, err := a.memoryClient(mf)
			if err != nil {
				return err
			}
			res, err := c.MemoryQuery(cmd.Context(), ns, args[0], req)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(a.env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSCORE\tCREATED\tAGENT\tTEXT")
			for _, it := range res.Items {
				score := "-"
				if it.Score > 0 {
					score = fmt.Sprintf("%.3f", it.Score)
				}
				text := strings.Join(strings.Fields(it.Text), " ")
				if it.Summary {
					text = "[summary] " + text
				}
				if r := []rune(text); len(r) > 80 {
					text = string(r[:79]) + "…"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.ID, score, it.CreatedAt, dash(it.Scope.Agent), text)
			}
			return tw.Flush()
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVar(&meta, "metadata", "", "keep items whose metadata has these values, a JSON object")
	cmd.Flags().StringVar(&req.Since, "since", "", "keep items written since a time (RFC 3339) or for a duration (24h)")
	cmd.Flags().IntVar(&req.Limit, "limit", 0, "most items answered (default 10, at most 1000)")
	cmd.Flags().BoolVar(&req.IncludeSummarized, "include-summarized", false, "also show items compacted into a summary")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func newMemoryRmCmd(a *app, mf *memoryFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm NAME ID...",
		Short: "Delete items",
		Args:  wrapArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := a.memoryClient(mf)
			if err != nil {
				return err
			}
			for _, id := range args[1:] {
				if err := c.MemoryDelete(cmd.Context(), ns, args[0], id); err != nil {
					return err
				}
				fmt.Fprintf(a.env.Stdout, "item %s deleted from memory %s\n", id, args[0])
			}
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	return cmd
}

func newMemorySummarizeCmd(a *app, mf *memoryFlags) *cobra.Command {
	var keep int
	var olderThan string
	cmd := &cobra.Command{
		Use:   "summarize NAME",
		Short: "Compact old items into one summary item",
		Example: `  warden memory summarize notes --agent support-bot
  warden memory summarize notes --keep-recent 5 --older-than 24h`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := memory.SummarizeRequest{Scope: mf.scope(), OlderThan: olderThan}
			if cmd.Flags().Changed("keep-recent") {
				if keep < 0 {
					return usagef("--keep-recent must not be negative")
				}
				req.KeepRecent = &keep
			}
			c, ns, err := a.memoryClient(mf)
			if err != nil {
				return err
			}
			res, err := c.MemorySummarize(cmd.Context(), ns, args[0], req)
			if err != nil {
				return err
			}
			if res.Summary == nil {
				fmt.Fprintf(a.env.Stdout, "nothing to summarize in memory %s\n", args[0])
				return nil
			}
			fmt.Fprintf(a.env.Stdout, "%d items of memory %s summarized (%s, policy %s) into item %s:\n%s\n",
				res.Summarized, args[0], res.Method, res.Policy, res.Summary.ID, res.Summary.Text)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().IntVar(&keep, "keep-recent", 0, "newest items left alone (default the Memory's spec.summarize.keepRecent)")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "compact only items older than this duration, e.g. 24h")
	return cmd
}
