package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/clientconf"
	mcpconfig "github.com/mcpvisor/mcpvisor/manager/config"
)

const initUsage = `Usage: mcpvisor init [-c FILE] [--yes] [--no-import]

Writes your config (default: startup.lua in your configuration directory,
which mcpvisor uses when there is no -c and no ./startup.lua): the built-in
demo server and commented examples. It then offers to import the servers of
every AI client config it finds (Claude Desktop, Claude Code, Cursor,
VS Code, Windsurf, Codex), one question per client. An existing config is
never replaced without asking.

  -c FILE       write FILE instead
  --yes         take every default answer: import what is found, keep an
                existing config (servers found are added to its end)
  --no-import   do not look at other clients' configs
`

// runInit is `mcpvisor init`.
func runInit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("c", "", "")
	yes := fs.Bool("yes", false, "")
	noImport := fs.Bool("no-import", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, initUsage)
			return 0
		}
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		fmt.Fprintf(stderr, "mcpvisor init: %v\n\n%s", err, initUsage)
		return 2
	}
	ask := &confirmer{in: bufio.NewReader(stdin), out: stdout, yes: *yes, interactive: isTerminal(stdin)}
	if err := initConfig(*file, !*noImport, ask, stdout); err != nil {
		fmt.Fprintf(stderr, "mcpvisor init: %v\n", err)
		return 1
	}
	return 0
}

func initConfig(file string, doImport bool, ask *confirmer, out io.Writer) error {
	path := file
	if path == "" {
		var err error
		if path, err = userConfigPath(); err != nil {
			return err
		}
	}
	existing, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	base := defaultStartup
	if exists {
		replace, err := ask.ask(fmt.Sprintf("%s exists. Replace it with the default?", path), false)
		if err != nil {
			return err
		}
		if !replace {
			base = string(existing)
			fmt.Fprintf(out, "Keeping %s.\n", path)
		}
	}
	var imported []string
	if doImport {
		env, err := clientconf.HostEnv(runtime.GOOS)
		if err != nil {
			return err
		}
		var lua string
		if lua, imported, err = importClients(env, base, ask, out); err != nil {
			return err
		}
		base = strings.TrimRight(base, "\n") + "\n" + lua
	}
	switch {
	case exists && base == string(existing):
		fmt.Fprintf(out, "Nothing to change in %s.\n", path)
		return nil
	case exists:
		if err := replaceFile(path, []byte(base)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	default:
		if err := writeNew(path, []byte(base)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	fmt.Fprintf(out, "Wrote %s", path)
	if len(imported) > 0 {
		fmt.Fprintf(out, " with %d imported server(s): %s", len(imported), strings.Join(imported, ", "))
	}
	fmt.Fprintf(out, ".\nNext: mcpvisor connect CLIENT (%s) to use it from your AI client.\n",
		strings.Join(clientconf.IDs(), ", "))
	return nil
}

// importClients asks, for each client whose config lists servers, whether
// to take them in; it returns their declarations as Lua and their names.
// A name already declared in current, or by an earlier client, is skipped.
func importClients(env clientconf.Env, current string, ask *confirmer, out io.Writer) (string, []string, error) {
	var lua strings.Builder
	var names []string
	taken := map[string]bool{}
	for _, c := range clientconf.All() {
		path := c.Path(env)
		decls, err := clientServers(c, path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(out, "Skipping %s (%s): %v\n", c.Name, path, err)
			continue
		}
		var fresh []mcpconfig.Declaration
		for _, d := range decls {
			if taken[d.Name] || strings.Contains(current, fmt.Sprintf("mcp_add(%s", luaString(d.Name))) {
				continue
			}
			fresh = append(fresh, d)
		}
		if len(fresh) == 0 {
			continue
		}
		list := make([]string, len(fresh))
		for i, d := range fresh {
			list[i] = d.Name
		}
		ok, err := ask.ask(fmt.Sprintf("Import %d server(s) from %s (%s): %s?", len(fresh), c.Name, path, strings.Join(list, ", ")), true)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			continue
		}
		fmt.Fprintf(&lua, "\n-- Imported from %s (%s).\n", c.Name, path)
		for _, d := range fresh {
			lua.WriteString(luaDeclaration(d.Name, d.Raw))
			taken[d.Name] = true
			names = append(names, d.Name)
		}
	}
	return lua.String(), names, nil
}

// clientServers reads the servers of c's file at path, leaving out
// mcpvisor's own entry.
func clientServers(c *clientconf.Client, path string) ([]mcpconfig.Declaration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc := data
	if c.Format == clientconf.CodexTOML {
		if _, doc, err = c.Servers(data); err != nil {
			return nil, err
		}
	}
	decls, err := mcpconfig.ParseImport(path, doc)
	if err != nil {
		return nil, err
	}
	kept := decls[:0]
	for _, d := range decls {
		if d.Name != clientconf.EntryName {
			kept = append(kept, d)
		}
	}
	return kept, nil
}
