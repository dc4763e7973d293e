// The transport both scripts (client.mjs, search.mjs) connect with, from
// their arguments:
//
//   stdio COMMAND [ARG...]   spawn an MCP server on stdio
//   http URL                 Streamable HTTP (TOKEN env: bearer token)
//
// It prints usage naming script and exits 2 on anything else.
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

export function transportFromArgs(script, [mode, target, ...rest]) {
  if (mode === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, stderr: "inherit", env: childEnv() });
  }
  if (mode === "http") {
    const headers = process.env.TOKEN ? { Authorization: `Bearer ${process.env.TOKEN}` } : {};
    return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  console.error(`usage: node ${script} stdio COMMAND [ARG...] | node ${script} http URL`);
  process.exit(2);
}
