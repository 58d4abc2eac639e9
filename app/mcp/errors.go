package mcp

import "errors"

// ErrNoSandbox is returned for a server with transport stdio when the
// gateway has no OS sandbox to run it in.
var ErrNoSandbox = errors.New("MCP servers with transport stdio run in the OS sandbox, which is not available on this MCP gateway (it needs bubblewrap: apt-get install -y bubblewrap)")
