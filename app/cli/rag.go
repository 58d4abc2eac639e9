package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/rag"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
	"github.com/warden-dev/warden/jobs"
)

// defaultRAGPort is the RAG service's port.
const defaultRAGPort = 8085

// envRAGURL overrides the RAG service's URL for the rag commands.
const envRAGURL = "WARDEN_RAG_URL"

func newRAGCmd(a *app) *cobra.Command {
	var ragURL string
	cmd := &cobra.Command{
		Use:   "rag",
		Short: "Refresh RAG indexes, retrieve from them, and read knowledge source status",
		Long: `The RAG service (port 8085) indexes the documents of KnowledgeSources into
RAGIndexes and retrieves the chunks that best match a query. These commands talk
to it at --rag-url (default: $` + envRAGURL + `, else the context's server address on
port 8085) with the context's credential.`,
	}
	cmd.PersistentFlags().StringVar(&ragURL, "rag-url", "", "RAG service URL (default $"+envRAGURL+", else the server's host on port 8085)")
	connect := func() (*client.Client, string, error) {
		_, conn, err := a.connect()
		if err != nil {
			return nil, "", err
		}
		u := ragURL
		if u == "" {
			u, _ = a.env.LookupEnv(envRAGURL)
		}
		if u == "" {
			s, err := url.Parse(conn.Server)
			if err != nil || s.Host == "" {
				return nil, "", fmt.Errorf("server address %q: cannot derive the RAG URL; give --rag-url", conn.Server)
			}
			s.Host = net.JoinHostPort(s.Hostname(), fmt.Sprint(defaultRAGPort))
			s.Path = ""
			u = s.String()
		}
		return client.New(u, conn.Token, client.WithUserAgent("warden-cli")), conn.Namespace, nil
	}
	cmd.AddCommand(newRAGIndexCmd(a, connect), newRAGRetrieveCmd(a, connect), newRAGStatusCmd(a, connect))
	return cmd
}

type ragConnect func() (*client.Client, string, error)

func newRAGIndexCmd(a *app, connect ragConnect) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "index NAME",
		Short:   "Refresh a RAG index from its knowledge sources (runs as a background job)",
		Example: `  warden rag index handbook`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := connect()
			if err != nil {
				return err
			}
			out, err := c.RAGIndex(cmd.Context(), ns, args[0])
			if err != nil {
				return err
			}
			job := ""
			if out.Job != 0 {
				job = fmt.Sprintf(" (job %d)", out.Job)
			}
			_, err = fmt.Fprintf(a.env.Stdout, "ragindex/%s refresh %s%s\n", out.Index, out.Status, job)
			return err
		},
	}
	a.addNamespaceFlag(cmd)
	return cmd
}

func newRAGRetrieveCmd(a *app, connect ragConnect) *cobra.Command {
	var (
		req      rag.RetrieveRequest
		metadata []string
		output   string
	)
	cmd := &cobra.Command{
		Use:   "retrieve NAME --query TEXT",
		Short: "Retrieve the chunks of a RAG index that best match a query",
		Example: `  warden rag retrieve handbook --query "how do refunds work" --top-k 3
  warden rag retrieve handbook -q "travel policy" --source policies --metadata team=finance -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(req.Query) == "" {
				return usagef("--query is required")
			}
			if output != "text" && output != outJSON {
				return usagef("unknown output format %q: use text or json", output)
			}
			for _, kv := range metadata {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--metadata %q: want KEY=VALUE", kv)
				}
				if req.Filter.Metadata == nil {
					req.Filter.Metadata = map[string]string{}
				}
				req.Filter.Metadata[k] = v
			}
			req.Index = args[0]
			c, ns, err := connect()
			if err != nil {
				return err
			}
			out, err := c.RAGRetrieve(cmd.Context(), ns, req)
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, out)
			}
			return writeRetrieval(a, out)
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.StringVarP(&req.Query, "query", "q", "", "the query")
	f.IntVarP(&req.TopK, "top-k", "k", 0, "how many chunks (default: the index's topK)")
	f.StringSliceVar(&req.Filter.Sources, "source", nil, "only chunks of these knowledge sources (repeatable)")
	f.StringArrayVar(&metadata, "metadata", nil, "only chunks with this metadata, KEY=VALUE (repeatable)")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func writeRetrieval(a *app, out *rag.RetrieveResponse) error {
	w := a.env.Stdout
	if len(out.Results) == 0 {
		_, err := fmt.Fprintf(w, "No chunk of ragindex/%s matches.\n", out.Index)
		return err
	}
	for i, r := range out.Results {
		cite := r.Citation.URI
		if cite == "" {
			cite = r.Citation.Source + "/" + r.Citation.Document
		}
		fmt.Fprintf(w, "%d. %s#%d  score %.4f (%s)\n", i+1, cite, r.Citation.Chunk, r.Score, out.Ranking)
		if r.Injection != nil {
			kinds := make([]string, 0, len(r.Injection.Findings))
			for _, f := range r.Injection.Findings {
				kinds = append(kinds, f.Kind)
			}
			sort.Strings(kinds)
			fmt.Fprintf(w, "   prompt injection %s: %s\n", r.Injection.Action, strings.Join(kinds, ", "))
		}
		for _, line := range strings.Split(strings.TrimSpace(r.Text), "\n") {
			fmt.Fprintf(w, "   %s\n", line)
		}
	}
	if out.Withheld > 0 {
		fmt.Fprintf(w, "%d chunk(s) withheld: the prompt-injection scan blocked them.\n", out.Withheld)
	}
	return nil
}

func newRAGStatusCmd(a *app, connect ragConnect) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "status SOURCE",
		Short:   "Show the sync status of a knowledge source",
		Example: `  warden rag status handbook-docs`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != outJSON {
				return usagef("unknown output format %q: use text or json", output)
			}
			c, ns, err := connect()
			if err != nil {
				return err
			}
			out, err := c.RAGSourceStatus(cmd.Context(), ns, args[0])
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, out)
			}
			w := a.env.Stdout
			st := out.Status
			fmt.Fprintf(w, "knowledgesource/%s (%s, namespace %s)\n", out.Name, out.Type, out.Namespace)
			fmt.Fprintf(w, "  phase      %s\n", st.Phase)
			if st.LastSyncAt != "" {
				fmt.Fprintf(w, "  last sync  %s (index %s)\n", st.LastSyncAt, st.Index)
			}
			fmt.Fprintf(w, "  documents  %d\n  chunks     %d\n", st.Documents, st.Chunks)
			for _, e := range st.Errors {
				fmt.Fprintf(w, "  error      %s\n", e)
			}
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// ragOptions are up's RAG flags.
type ragOptions struct {
	port          int
	fileRoot      string
	embeddingsURL string
}

// ragService is the RAG service of `warden up`, with its listener bound
// before first-start setup (a busy port fails early, like the others).
type ragService struct {
	ln   net.Listener
	url  string
	jobs *jobs.RAG
	svc  *rag.Service
}

// bindRAG binds the RAG listener; nil when --rag-port is 0.
func bindRAG(host string, o ragOptions) (*ragService, error) {
	if o.port == 0 {
		return nil, nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(o.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the RAG service: %w; "+
			"is another Warden (or another program) using port %d? Stop it, or choose another port with --rag-port (0: no RAG service)",
			addr, err, o.port)
	}
	return &ragService{ln: ln}, nil
}

// close releases the listener when the service never started.
func (r *ragService) close() {
	if r != nil {
		_ = r.ln.Close()
	}
}

// build creates the service once the control plane exists: it verifies
// workload tokens of audience warden:rag with the control plane's issuer
// and asks the control plane's authorizer.
func (r *ragService) build(a *app, srv *server.Server, st store.Store, o ragOptions, dataDir, scheme, host string, logger *slog.Logger) error {
	if r == nil {
		return nil
	}
	root := o.fileRoot
	if root == "" {
		root = filepath.Join(dataDir, "knowledge")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("RAG file root %s: %w", root, err)
	}
	cfg := rag.Config{
		Store: st, Bus: srv.Bus(), Queue: r.jobs, Logger: logger, Now: a.env.Now,
		Authn:   auth.NewAuthenticator(st, a.env.Now, workload.NewVerifier(srv.Issuer(), workload.AudienceRAG, a.env.Now)),
		Authz:   srv.Authorizer(),
		Fetcher: rag.Fetcher{FileRoot: root},
	}
	if o.embeddingsURL != "" {
		cfg.Embedder = &rag.Embedder{URL: o.embeddingsURL}
	}
	svc, err := rag.New(cfg)
	if err != nil {
		return err
	}
	r.svc = svc
	r.jobs.Bind(svc)
	r.url = scheme + "://" + net.JoinHostPort(clientHost(host), strconv.Itoa(o.port))
	return nil
}

// serve serves until ctx ends; the error, if any, is logged.
func (r *ragService) serve(ctx context.Context, logger *slog.Logger) (wait func()) {
	if r == nil || r.svc == nil {
		r.close()
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.svc.Serve(ctx, r.ln); err != nil && ctx.Err() == nil {
			logger.Error("RAG service stopped", "err", err)
		}
	}()
	return func() { <-done }
}
