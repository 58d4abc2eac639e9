// An MCP client of the official TypeScript SDK against Warden's per-agent
// endpoint: list the tools, call one, print both as JSON on stdout.
// Usage: node ts-client.mjs <sdk dir> <endpoint> <token> <tool> <json arguments>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, endpoint, token, tool, args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "warden-ts-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name).sort(), result }));
await client.close();
