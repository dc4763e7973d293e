// Tool search with the official TypeScript SDK client (issue 27): connect
// to a gateway in catalogue = "search" mode, list its tools, find a tool
// with search_tools {query: QUERY}, and call the first match with
// call_tool {name, arguments: ARGS (a JSON object, default {})}.
//
//   node search.mjs stdio COMMAND [ARG...]
//   node search.mjs http URL                   (TOKEN env: bearer token)
//
// Prints one JSON object: {"tools": [names], "found": [names],
// "structured": bool, "result": the call_tool CallToolResult}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// The SDK starts a stdio server with a few variables only (HOME, PATH,
// ...), as MCP hosts do; XDG_STATE_HOME is added so that a toolhost under
// test keeps its default store in the test's directory, not the user's.
function childEnv() {
  const env = getDefaultEnvironment();
  if (process.env.XDG_STATE_HOME) env.XDG_STATE_HOME = process.env.XDG_STATE_HOME;
  return env;
}

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "inherit", env: childEnv() });
} else if (mode === "http") {
  const headers = process.env.TOKEN ? { Authorization: `Bearer ${process.env.TOKEN}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: node search.mjs stdio COMMAND [ARG...] | node search.mjs http URL");
  process.exit(2);
}
const client = new Client({ name: "toolhost-tsclient-search", version: "1.0.0" }, { capabilities: {} });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const out = { tools: tools.map((t) => t.name).sort() };
  const search = await client.callTool({ name: "search_tools", arguments: { query: process.env.QUERY, limit: 3 } });
  if (search.isError) throw new Error(`search_tools: ${search.content[0].text}`);
  const found = search.structuredContent.tools;
  out.found = found.map((t) => t.name);
  out.structured = JSON.stringify(JSON.parse(search.content[0].text)) === JSON.stringify(search.structuredContent);
  out.result = await client.callTool({ name: "call_tool", arguments: { name: found[0].name, arguments: JSON.parse(process.env.ARGS || "{}") } });
  console.log(JSON.stringify(out));
} catch (err) {
  console.error(`tsclient: ${err.message}`);
  process.exitCode = 1;
} finally {
  await client.close();
}
