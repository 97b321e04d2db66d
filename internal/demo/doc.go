// Package demo implements mcpvisor's built-in demo MCP server.
//
// The demo server is a small, dependency-free MCP server that mcpvisor can
// run as a child process (or in memory) so that users can try the host
// without installing anything. It is also a convenient, well-behaved peer
// for tests.
//
// It offers:
//
//   - tools: echo, add, sleep and fail;
//   - the resource demo://readme (text/plain);
//   - the prompt greet {name}.
//
// [NewServer] builds the server; [Serve] runs it over newline-delimited JSON
// on an arbitrary reader/writer pair (for example stdin/stdout).
package demo
