// tsprobe.mjs runs a script of operations with the TypeScript SDK's client
// and prints, for each step, what the client observed in the order it
// observed it, for tests that compare what a client sees of a server
// directly and through mcpvisor.
//
// argv[2] is the connection as JSON: {"url": URL} for streamable HTTP, or
// {"command": [argv...], "env": {...}} for a stdio server it starts.
// argv[3] is the script as JSON: {"prefix": what to put before the
// server's names, "steps": [{"name", "do": [action...]}]}, where an action
// is {"op": "tools" | "catalogue" | "call" | "complete" | "setLevel" |
// "cancel", "tool", "args", "token", "prompt", "arg", "value", "level",
// "after", "afterArgs"}.
//
// It prints one JSON object: {"steps": {NAME: [event...]}}, an event being
// {"wire": message} (a log message, progress or a question of the server,
// as JSON-RPC, and the response that ended a call), {"sampled": [texts]},
// {"tools": [names]}, {"catalogue": {prompts, resources, templates}},
// {"complete": [values]}, {"level": level}, {"cancelled": bool} or
// {"error": {"code", "message"}}. Any failure outside an action prints
// {"error": ...} and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [conn, plan] = process.argv.slice(2).map((a) => JSON.parse(a));

// A form answered: each field's default, else its first choice, else a
// value of its type.
function fieldValue(s = {}) {
  if ("default" in s) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  for (const k of ["oneOf", "anyOf"]) {
    if (Array.isArray(s[k]) && s[k].length) return s[k][0].const;
  }
  switch (s.type) {
    case "array":
      return [fieldValue(s.items)];
    case "boolean":
      return true;
    case "integer":
    case "number":
      return s.minimum ?? 1;
  }
  return { email: "ada@example.com", uri: "https://example.com", date: "2000-01-01", "date-time": "2000-01-01T00:00:00Z" }[s.format] ?? "Ada";
}

function fillForm(schema) {
  const out = {};
  for (const [name, s] of Object.entries(schema?.properties ?? {})) out[name] = fieldValue(s);
  return out;
}

let events = []; // the current step's
const wire = (message) => events.push({ wire: message });
const failed = (err) => events.push({ error: { code: err?.code ?? null, message: String(err?.message ?? err) } });

try {
  let transport;
  if (conn.url) {
    transport = new StreamableHTTPClientTransport(new URL(conn.url));
  } else {
    const [command, ...args] = conn.command;
    transport = new StdioClientTransport({ command, args, env: { ...process.env, ...(conn.env ?? {}) }, stderr: "ignore" });
  }
  const client = new Client(
    { name: "ts-same-as-direct", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    wire({ method: req.method, params: req.params });
    return { action: "accept", content: fillForm(req.params.requestedSchema) };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    wire({ method: req.method, params: req.params });
    events.push({ sampled: req.params.messages.filter((m) => m.content?.type === "text").map((m) => m.content.text) });
    return { role: "assistant", model: "test-model", content: { type: "text", text: "Paris" } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async (req) => {
    wire({ method: req.method, params: req.params ?? {} });
    return { roots: [{ uri: "file:///home/ada/project", name: "project" }] };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => wire({ method: n.method, params: n.params }));
  let progressed = () => {};
  // Progress under the script's own token, not one the SDK picks.
  client.setNotificationHandler(ProgressNotificationSchema, (n) => {
    wire({ method: n.method, params: n.params });
    progressed();
  });
  await client.connect(transport);

  const name = (n) => plan.prefix + n;
  const call = async (tool, args, token, signal) => {
    const params = { name: name(tool), arguments: args ?? {} };
    if (token) params._meta = { progressToken: token };
    const result = await client.callTool(params, undefined, { signal, timeout: 30000 });
    wire({ jsonrpc: "2.0", id: 0, result }); // the response, as it ended the call
  };
  const act = {
    tools: async () => events.push({ tools: (await client.listTools()).tools.map((t) => t.name) }),
    catalogue: async () =>
      events.push({
        catalogue: {
          prompts: (await client.listPrompts()).prompts.map((p) => p.name),
          resources: (await client.listResources()).resources.map((r) => r.uri),
          templates: (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate),
        },
      }),
    call: (a) => call(a.tool, a.args, a.token),
    complete: async (a) =>
      events.push({
        complete: (await client.complete({ ref: { type: "ref/prompt", name: name(a.prompt) }, argument: { name: a.arg, value: a.value } }))
          .completion.values,
      }),
    setLevel: async (a) => {
      await client.setLoggingLevel(a.level);
      events.push({ level: a.level });
    },
    cancel: async (a) => {
      const abort = new AbortController();
      const first = new Promise((resolve) => (progressed = resolve));
      const running = call(a.tool, a.args, "cancel-me", abort.signal);
      await first;
      progressed = () => {};
      abort.abort();
      let cancelled = false;
      try {
        await running;
      } catch (err) {
        cancelled = abort.signal.aborted;
      }
      events.length = 0; // what came before is the cancelled call's
      events.push({ cancelled });
      await call(a.after, a.afterArgs);
    },
  };
  const out = { steps: {} };
  for (const st of plan.steps) {
    events = [];
    for (const a of st.do) {
      try {
        await act[a.op](a);
      } catch (err) {
        failed(err);
      }
    }
    out.steps[st.name] = events;
  }
  // The SDK's close leaves an HTTP session to expire: end it, as a
  // client that leaves for good does.
  if (conn.url) await transport.terminateSession();
  await client.close();
  console.log(JSON.stringify(out));
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  process.exit(1);
}
