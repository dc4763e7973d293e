// A real MCP client built on the official TypeScript SDK, for the gateway's
// tests and `make run`.
//
//   node client.mjs stdio COMMAND [ARG...]     spawn an MCP server on stdio
//   node client.mjs http URL                   Streamable HTTP (TOKEN env: bearer token)
//
// It lists the tools, then, when CALL is set, calls that tool with ARGS (a
// JSON object, default {}), and prints one JSON object on stdout:
// {"server": {...}, "tools": [names], "result": CallToolResult}.
// With ELICIT (a JSON object) it declares elicitation and accepts every
// request with that content; with SAMPLE (a text) it declares sampling and
// answers every request with that text from model "tsclient-model"; with
// PROGRESS it asks for the call's progress and prints the reports.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema, CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { transportFromArgs } from "./transport.mjs";

const transport = transportFromArgs("client.mjs", process.argv.slice(2));

const capabilities = {};
if (process.env.ELICIT) capabilities.elicitation = {};
if (process.env.SAMPLE) capabilities.sampling = {};
const client = new Client({ name: "toolhost-tsclient", version: "1.0.0" }, { capabilities });
if (process.env.ELICIT) {
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: JSON.parse(process.env.ELICIT) }));
}
if (process.env.SAMPLE) {
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    model: "tsclient-model", role: "assistant", content: { type: "text", text: process.env.SAMPLE },
  }));
}
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const out = { server: client.getServerVersion(), tools: tools.map((t) => t.name).sort() };
  if (process.env.CALL) {
    // With PROGRESS set, the call asks for progress (a progressToken) and
    // the reports received are printed as "progress".
    const options = {};
    if (process.env.PROGRESS) {
      out.progress = [];
      options.onprogress = (p) => out.progress.push(p);
    }
    out.result = await client.callTool({ name: process.env.CALL, arguments: JSON.parse(process.env.ARGS || "{}") }, undefined, options);
  }
  console.log(JSON.stringify(out));
} catch (err) {
  console.error(`tsclient: ${err.message}`);
  process.exitCode = 1;
} finally {
  await client.close();
}
