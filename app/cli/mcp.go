package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/resource"
)

// envMCPServer overrides the MCP gateway's address.
const envMCPServer = "WARDEN_MCP_SERVER"

type mcpOptions struct {
	gateway string
	output  string
	reason  string
}

func newMCPCmd(a *app) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Discover, pin and quarantine MCP servers (the MCP gateway, port 8082)",
		Long: `Commands of the MCP gateway. The gateway's address is --mcp-server, else $` + envMCPServer + `,
else the control plane's host on port 8082.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.gateway, "mcp-server", "", "MCP gateway address (default: the control plane's host, port 8082)")
	pf.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	a.addNamespaceFlag(cmd)
	run := func(use, short, verb string, args cobra.PositionalArgs) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
			server := ""
			if len(args) > 0 {
				server = args[0]
			}
			return a.mcpAction(cmd.Context(), o, verb, server)
		}}
		return c
	}
	discover := run("discover [SERVER]", "Connect to the namespace's MCP servers (or one) and record what they offer", "discover", cobra.MaximumNArgs(1))
	pin := run("pin SERVER", "Pin a server's version and the hash of its tool definitions", "pin", cobra.ExactArgs(1))
	quarantine := run("quarantine SERVER", "Quarantine a server: every call to it is refused", "quarantine", cobra.ExactArgs(1))
	unquarantine := run("unquarantine SERVER", "Lift a quarantine (admin; refused while the server drifts from its pin)", "unquarantine", cobra.ExactArgs(1))
	for _, c := range []*cobra.Command{quarantine, unquarantine} {
		c.Flags().StringVar(&o.reason, "reason", "", "why (recorded in the audit log)")
	}
	cmd.AddCommand(discover, pin, quarantine, unquarantine)
	return cmd
}

// mcpGateway is the MCP gateway's base URL.
func (a *app) mcpGateway(o *mcpOptions, controlURL string) (string, error) {
	if o.gateway != "" {
		return strings.TrimRight(o.gateway, "/"), nil
	}
	if v, ok := a.env.LookupEnv(envMCPServer); ok && v != "" {
		return strings.TrimRight(v, "/"), nil
	}
	u, err := url.Parse(controlURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("server address %q: cannot derive the MCP gateway's address: pass --mcp-server", controlURL)
	}
	u.Host = net.JoinHostPort(u.Hostname(), "8082")
	u.Path = ""
	return strings.TrimRight(u.String(), "/"), nil
}

func (a *app) mcpAction(ctx context.Context, o *mcpOptions, verb, server string) error {
	_, conn, err := a.connect()
	if err != nil {
		return err
	}
	base, err := a.mcpGateway(o, conn.Server)
	if err != nil {
		return err
	}
	path := "/v1/mcp/" + url.PathEscape(server) + "/" + verb
	body := map[string]string{}
	switch verb {
	case "discover":
		path = "/v1/mcp/discover"
		if server != "" {
			body["server"] = server
		}
	case "quarantine", "unquarantine":
		if o.reason != "" {
			body["reason"] = o.reason
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	endpoint := base + path + "?namespace=" + url.QueryEscape(conn.Namespace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("MCP gateway address %q: %w", base, err)
	}
	req.Header.Set("Content-Type", client.ContentTypeJSON)
	req.Header.Set("User-Agent", "warden-cli")
	if conn.Token != "" {
		req.Header.Set("Authorization", "Bearer "+conn.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) {
			return fmt.Errorf("%w at %s (is `warden up` serving the MCP gateway? --mcp-server names another address): %w", client.ErrUnreachable, base, err)
		}
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb apierr.Body
		if json.Unmarshal(raw, &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
			eb.Error = &apierr.Error{Code: apierr.CodeInternal, Message: http.StatusText(resp.StatusCode)}
		}
		return &client.APIError{StatusCode: resp.StatusCode, Err: eb.Error}
	}
	var items []*resource.Object
	if verb == "discover" {
		var l struct {
			Items []*resource.Object `json:"items"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decode the answer: %w", err)
		}
		items = l.Items
	} else {
		var obj resource.Object
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("decode the answer: %w", err)
		}
		items = []*resource.Object{&obj}
	}
	if o.output == "json" {
		_, err := a.env.Stdout.Write(append(raw, '\n'))
		return err
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tPIN\tDRIFT\tQUARANTINE\tTOOLS\tERROR")
	for _, it := range items {
		errText := orDash(text(lookup(it.Status, "error")))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Metadata.Name, orDash(text(lookup(it.Status, "server", "version"))),
			mcpPin(it), mcpDrift(it), mcpQuarantine(it), length(lookup(it.Status, "tools")), errText)
	}
	return tw.Flush()
}

// mcpPin shows spec.pinnedVersion with the tools hash shortened.
func mcpPin(o *resource.Object) string {
	p, _ := o.Spec["pinnedVersion"].(string)
	if p == "" {
		return "-"
	}
	v, h := resource.ParseMCPPin(p)
	if h == "" {
		return v
	}
	short := strings.TrimPrefix(h, "sha256:")
	if len(short) > 12 {
		short = short[:12]
	}
	return v + "@" + short
}

// mcpDrift says which tools moved since the pin.
func mcpDrift(o *resource.Object) string {
	d, ok := o.Status["drift"].(map[string]any)
	if !ok {
		return "-"
	}
	changes, _ := d["changes"].([]any)
	var tools []string
	for _, c := range changes {
		if m, ok := c.(map[string]any); ok {
			tools = append(tools, fmt.Sprintf("%v(%v)", m["tool"], m["change"]))
		}
	}
	if len(tools) == 0 {
		return fmt.Sprintf("version %v", d["version"])
	}
	return strings.Join(tools, ",")
}

// mcpQuarantine shows the quarantine's reason, shortened.
func mcpQuarantine(o *resource.Object) string {
	if q, _ := o.Spec["quarantined"].(bool); q {
		return "spec"
	}
	q, ok := o.Status["quarantine"].(map[string]any)
	if !ok {
		return "-"
	}
	r, _ := q["reason"].(string)
	if len(r) > 40 {
		r = r[:40] + "…"
	}
	return "yes: " + r
}
