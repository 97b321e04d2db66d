// Package interop is a test fixture for running mcpvisor against software
// nobody here wrote: the official MCP reference servers
// (@modelcontextprotocol/server-everything, server-filesystem) and clients
// (the MCP Inspector's command-line mode, the TypeScript SDK's client), and
// Claude Code.
//
// They are Node packages pinned in this directory's package.json and
// package-lock.json and installed into internal/interop/node_modules with
//
//	npm ci --prefix internal/interop
//
// (.ci/run does this). Tests obtain them through [StdioCommand], [StartHTTP],
// [StartSSE], [FilesystemCommand], [Inspector], [TSClient] (a client that lists and
// calls), [TSProbe] (a client that runs a script of operations and says what it
// observed, in order) and [ClaudeCode]. When node or
// an installed package is missing, these helpers
// skip the calling test, or fail it when the environment variable
// MCPVISOR_INTEROP=1 is set (as it is in CI), so that a missing install can
// never turn the interop tests into silent skips there.
//
// Facts about the pinned version (2026.8.31), measured or read from its source:
//
//   - Entry point: node dist/index.js stdio|sse|streamableHttp (stdio is the
//     default). HTTP modes read the port from PORT (default 3001); there is no
//     host/bind variable, the server listens on all interfaces. Tests talk to
//     it on 127.0.0.1 only.
//   - Server info: name "mcp-servers/everything", version "2.0.0". Its TS SDK
//     (1.32.x) speaks protocol 2025-11-25 at most; go-sdk v1.8.0 first tries
//     server/discover (2026-07-28), which the server rejects, then falls back
//     to initialize and negotiates 2025-11-25.
//   - Tools registered up front: echo, get-annotated-message, get-env,
//     get-resource-links, get-resource-reference, get-structured-content,
//     get-sum, get-tiny-image, gzip-file-as-resource, toggle-simulated-logging,
//     toggle-subscriber-updates, trigger-long-running-operation. After
//     notifications/initialized the server registers more tools, depending on
//     the client's capabilities: simulate-research-query (always, a task
//     tool), get-roots-list (roots), trigger-elicitation-request and
//     trigger-url-elicitation (elicitation), trigger-sampling-request
//     (sampling), and the *-async variants (sampling/elicitation plus tasks).
//     Every such late registration sends notifications/tools/list_changed
//     (one arrives right after connect, in every transport; the first
//     tools/list already includes simulate-research-query). That tool has
//     execution.taskSupport "required": a plain tools/call returns isError
//     with "requires task augmentation".
//   - Only get-structured-content has an outputSchema. Input schemas carry
//     "$schema": draft-07 (jsonschema-go v0.4.3 resolves and validates them).
//   - echo answers {"message": "x"} with the text "Echo: x".
//   - trigger-long-running-operation {duration (s, default 10), steps (default
//     5)} sends notifications/progress (progress i of total steps) when the
//     call carries a progress token.
//   - get-structured-content {location: "New York"|"Chicago"|"Los Angeles"}
//     has an outputSchema and returns structuredContent plus the same JSON as
//     text.
//   - gzip-file-as-resource {name, data (URL or data: URI), outputType
//     "resourceLink" (default) | "resource"} fetches data — by default a URL
//     on the internet; [Env] restricts it to 127.0.0.1, and tests pass data:
//     URIs — and registers a session resource, which sends
//     notifications/resources/list_changed.
//   - toggle-simulated-logging and toggle-subscriber-updates start 5-second
//     timers sending notifications/message and notifications/resources/updated.
//   - get-env returns the server's whole environment: do not hand the server
//     secrets.
//   - With the roots capability advertised the server sends roots/list ~350 ms
//     after initialization. mcpvisor advertises elicitation, sampling and
//     roots only when something can answer them (a Lua handler, global
//     roots, a gateway whose clients may): with none, the server hides the
//     tools that need them.
//   - Output: stdio mode writes one banner line to stderr and exits 0 on stdin
//     EOF; streamableHttp logs every request to stdout; sse logs every message
//     to stderr. Both HTTP modes print their "listening" line even when the
//     port is taken: streamableHttp then exits 1, sse exits 0. Readiness is
//     therefore judged by connecting, never by the log.
//
// The MCP Inspector 0.15.0 (the last that runs on Node 20) in CLI mode,
// `node cli/build/cli.js --cli COMMAND ARGS... --method tools/list`, starts
// the server, connects over stdio, asks one thing, prints the result as JSON
// on stdout and closes the server's stdin. It lists the tools right after
// connecting, also before tools/call, whose --tool-arg key=value it converts
// by the listed schema (a tool missing from that list gets strings).
// Other methods: resources/read --uri, prompts/get --prompt-name
// --prompt-args key=value.
//
// server-filesystem 2026.8.31, `node dist/index.js DIR...`, offers the 14
// [FilesystemTools] over stdio, and asks a client that declares roots for
// them as soon as it has initialized.
//
// Claude Code 2.1.332 (@anthropic-ai/claude-code) is a native binary, not
// a Node program: npm installs this platform's package
// (@anthropic-ai/claude-code-linux-x64 and the like, an optional
// dependency, about 400 MB) and the main package's install script copies
// its binary to bin/claude.exe; nothing is downloaded from anywhere but
// the npm registry, and it needs no login. Measured with `claude -p`
// against a fake model (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY):
//
//   - It sends POST /v1/messages?beta=true with stream true (server-sent
//     events), the model given by --model and the key as x-api-key. With
//     --bare --tools "" and ENABLE_TOOL_SEARCH=false the request offers
//     the MCP tools alone, named mcp__SERVER__TOOL; without
//     ENABLE_TOOL_SEARCH=false it offers them only by name, behind its
//     own ToolSearch tool.
//   - It negotiates protocol 2026-07-28 and validates results strictly: a
//     tools/list whose cacheScope is neither "public" nor "private" is
//     rejected whole, retried, and the server left with no tools.
//   - A tool result with structured content reaches the model as that
//     content's JSON, not the text beside it.
//   - It honours HTTP(S)_PROXY and NO_PROXY for the model and for MCP over
//     HTTP, so a proxy that refuses everything shows what it reached for.
//   - It stops a stdio server it started with SIGINT when it exits.
package interop
