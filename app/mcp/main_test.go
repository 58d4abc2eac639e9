package mcp_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/sandbox"
)

// stdioServerArg makes the test binary a stdio MCP server built with the
// Go SDK (see stdioServerMain); the tests start it, as an MCPServer's
// spec.command, in the OS sandbox.
const stdioServerArg = "__warden-mcp-test-stdio"

// TestMain dispatches the test binary: the sandbox's init stub (the MCP
// gateway's sandbox runs its own executable), a stdio MCP server, or the
// tests. The first two exit through syscall.Exit: under -race os.Exit
// sleeps a second, and they have nothing to flush.
func TestMain(m *testing.M) {
	if sandbox.IsInit(os.Args) {
		syscall.Exit(sandbox.InitMain(os.Args))
	}
	if len(os.Args) > 2 && os.Args[1] == stdioServerArg {
		syscall.Exit(stdioServerMain(os.Args[2]))
	}
	os.Exit(m.Run())
}

// stdioServerMain is a stdio MCP server in one of these modes:
//
//	serve    tools echo, env_sha256 (the SHA-256 of a variable, so a test
//	         sees that a secret arrived without it being printed) and
//	         instance (a random id per process); each start appends a
//	         line to $STARTS_FILE when it is set
//	garbage  writes a line that is not JSON-RPC to stdout, then serves
//	leak     prints $TOKEN to stderr and exits 3 before serving
func stdioServerMain(mode string) int {
	switch mode {
	case "leak":
		fmt.Fprintln(os.Stderr, "token="+os.Getenv("TOKEN"))
		return 3
	case "garbage":
		fmt.Println("Starting the server… (a banner on stdout breaks the stdio transport)")
	case "serve":
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		return 2
	}
	if f := os.Getenv("STARTS_FILE"); f != "" {
		file, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(file, "started")
		_ = file.Close()
	}
	id := rand.Text()
	srv := sdk.NewServer(&sdk.Implementation{Name: "stdio-test", Version: "1.0.0"}, nil)
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo the text back.", Annotations: readOnly},
		func(ctx context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "env_sha256", Description: "The SHA-256 of an environment variable.", Annotations: readOnly},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*sdk.CallToolResult, any, error) {
			sum := sha256.Sum256([]byte(os.Getenv(in.Name)))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: hex.EncodeToString(sum[:])}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "instance", Description: "This process's random id.", Annotations: readOnly},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct {
			// Nonce makes calls differ, so that the gateway does not
			// answer a repeated read from its record.
			Nonce string `json:"nonce,omitempty"`
		}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: id}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
