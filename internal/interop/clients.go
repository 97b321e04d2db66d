package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The other pinned packages: a client people use to try a server, a
// second reference server, and the AI client people use these servers
// from most.
const (
	InspectorPackage  = "@modelcontextprotocol/inspector"
	FilesystemPackage = "@modelcontextprotocol/server-filesystem"
	ClaudeCodePackage = "@anthropic-ai/claude-code"
)

// FilesystemTools are the tools the pinned server-filesystem offers, sorted.
var FilesystemTools = []string{
	"create_directory",
	"directory_tree",
	"edit_file",
	"get_file_info",
	"list_allowed_directories",
	"list_directory",
	"list_directory_with_sizes",
	"move_file",
	"read_file",
	"read_media_file",
	"read_multiple_files",
	"read_text_file",
	"search_files",
	"write_file",
}

// Inspector is the argv that runs the MCP Inspector's command-line mode
// with node: append the server's command line, then what to ask
// ("--method", "tools/list"; see doc.go). It skips tb (or fails it when
// MCPVISOR_INTEROP=1) when node or the package is missing.
func Inspector(tb testing.TB) []string {
	tb.Helper()
	return []string{node(tb), entry(tb, InspectorPackage, "cli", "build", "cli.js"), "--cli"}
}

// ClaudeCode is the absolute path of the pinned Claude Code's `claude`,
// the native binary of this platform that the package's install script
// copies into its bin directory from the platform package npm installed
// beside it. It skips tb (or fails it when MCPVISOR_INTEROP=1) when the
// package is missing, or when that binary does not answer --version with
// the pinned version (the placeholder left by an install without scripts
// does not).
func ClaudeCode(tb testing.TB) string {
	tb.Helper()
	path := entry(tb, ClaudeCodePackage, "bin", "claude.exe")
	dir, err := packageDir(ClaudeCodePackage)
	if err != nil {
		missing(tb, err)
	}
	var pin struct{ Version string }
	if err := readJSON(filepath.Join(dir, "package.json"), &pin); err != nil {
		missing(tb, err)
	}
	version := exec.Command(path, "--version")
	// Nothing of the user's, and nothing sent anywhere.
	version.Env = append(os.Environ(), "HOME="+tb.TempDir(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	out, err := version.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), pin.Version+" ") {
		missing(tb, fmt.Errorf("%s --version: %q, %v (want %s; was the package installed with its install script?)", path, out, err, pin.Version))
	}
	return path
}

// FilesystemCommand is the argv that runs server-filesystem over stdio,
// allowed to work in dirs. It skips tb (or fails it when
// MCPVISOR_INTEROP=1) when node or the package is missing.
func FilesystemCommand(tb testing.TB, dirs ...string) []string {
	tb.Helper()
	return append([]string{node(tb), entry(tb, FilesystemPackage, "dist", "index.js")}, dirs...)
}

// node is the absolute path of node, or the end of the test via missing.
func node(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("node")
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		missing(tb, fmt.Errorf("node not found: %w", err))
	}
	return path
}

// entry is the absolute path of a file of an installed package, or the
// end of the test via missing.
func entry(tb testing.TB, pkg string, elem ...string) string {
	tb.Helper()
	dir, err := packageDir(pkg)
	if err != nil {
		missing(tb, err)
	}
	path := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(path); err != nil {
		missing(tb, err)
	}
	return path
}

// TSProbe is the argv that runs tsprobe.mjs, which runs a script of
// operations with the TypeScript SDK's client (pinned beside
// server-everything), with node: append its arguments (see the script).
// It skips tb (or fails it when MCPVISOR_INTEROP=1) when node or the SDK
// is missing.
func TSProbe(tb testing.TB) []string {
	tb.Helper()
	argv := TSClient(tb)
	return []string{argv[0], filepath.Join(filepath.Dir(argv[1]), "tsprobe.mjs")}
}
