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
import { transportFromArgs } from "./transport.mjs";

const transport = transportFromArgs("search.mjs", process.argv.slice(2));
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
