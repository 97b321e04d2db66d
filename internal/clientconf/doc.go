// Package clientconf knows where AI clients (Claude Desktop, Claude Code,
// Cursor, VS Code, Windsurf, Codex) keep their lists of MCP servers on each
// operating system, and edits those files the way a careful person would:
// one entry added, replaced or taken out, every other byte — other servers,
// other settings, indentation, key order — left as it was.
//
// Every client keeps its list as JSON except Codex, which keeps TOML. The
// JSON edits are made on the text (located with gjson) rather than by
// decoding and re-encoding, because a decode/encode round trip reorders
// keys, drops formatting and, for Claude Code's ~/.claude.json, rewrites a
// large file the client itself owns. The TOML edit works on whole tables,
// which is all a server entry is.
//
// The package does no I/O beyond what its callers hand it: paths are
// computed from an [Env], edits take and return bytes.
package clientconf
