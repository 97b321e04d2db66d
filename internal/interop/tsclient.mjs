// tsclient.mjs is an MCP client written with the TypeScript SDK, for tests
// that check mcpvisor's gateway against a client nobody here wrote. It
// connects to the URL in argv[2] over the transport in argv[3]
// ("streamable" or "sse"), or with argv[3] "stdio" starts the command whose
// argv is the JSON array argv[2]; it lists the tools at once, runs the calls
// in the JSON array argv[4] ({name, arguments, progress}), and prints one
// JSON object: the server's info, its tool names and each call's result and
// progress notifications. Any failure prints {"error": ...} and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [url, kind, plan] = process.argv.slice(2);
const out = { calls: [] };
try {
  let transport;
  if (kind === "stdio") {
    const [command, ...args] = JSON.parse(url);
    transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  } else if (kind === "sse") {
    transport = new SSEClientTransport(new URL(url));
  } else {
    transport = new StreamableHTTPClientTransport(new URL(url));
  }
  const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  for (const c of JSON.parse(plan || "[]")) {
    const progress = [];
    const opts = c.progress ? { onprogress: (p) => progress.push(p) } : {};
    const result = await client.callTool({ name: c.name, arguments: c.arguments ?? {} }, undefined, opts);
    out.calls.push({ result, progress });
  }
  await client.close();
  console.log(JSON.stringify(out));
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  process.exit(1);
}
