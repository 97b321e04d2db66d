// tsclient.mjs is an MCP client written with the TypeScript SDK, for tests
// that check mcpvisor's gateway against a client nobody here wrote. It
// connects to the URL in argv[2] over the transport in argv[3]
// ("streamable" or "sse"), or with argv[3] "stdio" starts the command whose
// argv is the JSON array argv[2]; it lists the tools at once, runs the calls
// in the JSON array argv[4] ({name, arguments, progress}), and prints one
// JSON object: the server's info, its tool names and each call's result,
// the progress the SDK handed to the call ("progress") and the progress
// notifications that came on the wire before the call's response ("wire").
// The two can differ: the SDK dispatches a notification a tick later than a
// response, and drops progress that arrives in the same read as the result
// (its handler is gone by then), which the legacy SSE transport does when
// both come in one chunk. Any failure prints {"error": ...} and exits 1.
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
  // The calls run one at a time: wire collects the progress of the one in
  // flight until a response comes.
  let wire = null;
  const dispatch = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (wire && msg.method === "notifications/progress") {
      const { progressToken, ...p } = msg.params;
      wire.push(p);
    } else if (wire && msg.id !== undefined && msg.method === undefined) {
      wire = null;
    }
    dispatch?.(msg, extra);
  };
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  for (const c of JSON.parse(plan || "[]")) {
    const progress = [];
    const seen = [];
    const opts = c.progress ? { onprogress: (p) => progress.push(p) } : {};
    wire = seen;
    const result = await client.callTool({ name: c.name, arguments: c.arguments ?? {} }, undefined, opts);
    wire = null;
    out.calls.push({ result, progress, wire: seen });
  }
  await client.close();
  console.log(JSON.stringify(out));
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  process.exit(1);
}
