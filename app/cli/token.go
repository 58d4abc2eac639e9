package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/workload"
)

// envAgentKey holds an agent-bound API key for `warden token`.
const envAgentKey = "WARDEN_AGENT_KEY"

type tokenOptions struct {
	agent    string
	env      string
	audience string
	apiKey   string
	output   string
}

func newTokenCmd(a *app) *cobra.Command {
	var o tokenOptions
	cmd := &cobra.Command{
		Use:   "token --agent NAME",
		Short: "Print a 5-minute workload identity token for an agent",
		Long: `Token exchanges an API key bound to the agent for a workload identity token (an
EdDSA-signed JWT valid for exactly 5 minutes) from POST /v1/auth/token, and prints only
the token, so that $(warden token --agent NAME) can be used in scripts.

The API key comes from --api-key, then WARDEN_AGENT_KEY, then the current credential;
it must be bound to the agent. With -o json the whole response is printed.`,
		Example: `  warden token --agent triage --env dev
  curl -H "Authorization: Bearer $(warden token --agent triage -n support)" …
  WARDEN_AGENT_KEY=wk_… warden token --agent triage --audience warden:model-router -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.agent == "" {
				return usagef("--agent is required")
			}
			if o.output != "" && o.output != outJSON {
				return usagef("unknown output format %q: want json", o.output)
			}
			return a.printToken(cmd.Context(), o, cmd.Flags().Changed("namespace"))
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&o.agent, "agent", "", "agent the token is for (required)")
	f.StringVar(&o.env, "env", "", "environment the agent runs in (optional when it is deployed to one)")
	f.StringVar(&o.audience, "audience", "warden:tool-gateway", "service the token is for")
	f.StringVar(&o.apiKey, "api-key", "", "agent-bound API key (default: $"+envAgentKey+", else the current credential)")
	f.StringVarP(&o.output, "output", "o", "", "output format: empty (the token only) or json")
	return cmd
}

func (a *app) printToken(ctx context.Context, o tokenOptions, nsGiven bool) error {
	_, conn, err := a.connect()
	if err != nil {
		return err
	}
	key := o.apiKey
	if key == "" {
		key, _ = a.env.LookupEnv(envAgentKey)
	}
	if key == "" {
		key = conn.Token
	}
	if key == "" {
		return fmt.Errorf("no API key: pass --api-key, set %s, or configure a credential", envAgentKey)
	}
	body := workload.TokenRequest{GrantType: workload.GrantAPIKey, APIKey: key, Audience: o.audience, Agent: o.agent, Environment: o.env}
	if nsGiven {
		body.Namespace = conn.Namespace
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	server := strings.TrimRight(conn.Server, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/v1/auth/token", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("server address %q: %w", conn.Server, err)
	}
	req.Header.Set("Content-Type", client.ContentTypeJSON)
	req.Header.Set("Accept", client.ContentTypeJSON)
	req.Header.Set("User-Agent", "warden-cli")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) {
			return fmt.Errorf("%w at %s: %w", client.ErrUnreachable, server, err)
		}
		return fmt.Errorf("POST /v1/auth/token: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read token response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb apierr.Body
		if json.Unmarshal(raw, &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
			eb.Error = &apierr.Error{Code: apierr.CodeInternal, Message: http.StatusText(resp.StatusCode)}
		}
		return &client.APIError{StatusCode: resp.StatusCode, Err: eb.Error}
	}
	var tr workload.TokenResponse
	if err := json.Unmarshal(raw, &tr); err != nil || tr.AccessToken == "" {
		return errors.New("the server's token response holds no access_token")
	}
	if o.output == outJSON {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, raw, "", "  "); err != nil {
			return fmt.Errorf("token response: %w", err)
		}
		_, err = fmt.Fprintln(a.env.Stdout, strings.TrimSpace(pretty.String()))
		return err
	}
	_, err = fmt.Fprintln(a.env.Stdout, tr.AccessToken)
	return err
}
