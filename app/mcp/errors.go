package mcp

import "errors"

// ErrStdioUnsupported is returned for a server with transport stdio.
var ErrStdioUnsupported = errors.New("MCP servers with transport stdio are not supported by this gateway yet")
