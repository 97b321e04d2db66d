package luaapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
	lua "github.com/yuin/gopher-lua"
)

// mcp_import(path) → list of names. Declares every server of a Claude
// Desktop / Cursor / VS Code style `mcpServers` JSON config, exactly as if
// each were an mcp_add: inside startup.lua they join the desired set, at
// the REPL they are added at once, each said to be declared at its file
// and entry. A leading ~/ is the home directory; another relative path is
// taken from the directory of the config (scripts/..). Problems raise one
// Lua error naming the file and each bad entry; nothing is declared then.
func (r *Runtime) luaImport(L *lua.LState) int {
	path := r.expandHome(L.CheckString(1))
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(r.opts.ScriptDir), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		L.RaiseError("mcp_import: %v", err)
	}
	decls, err := config.ParseImport(filepath.Base(path), data)
	if err != nil {
		raiseCoded(L, err)
	}
	specs := make([]manager.Spec, len(decls))
	for i, d := range decls {
		spec, err := config.DecodeSpec(d.Name, d.Raw, config.DecodeOptions{LookupEnv: r.opts.LookupEnv})
		if err != nil {
			raiseCoded(L, fmt.Errorf("%s: %s: %w", filepath.Base(path), d.Entry, err))
		}
		specs[i] = spec
	}
	names := make([]lua.LValue, len(decls))
	for i, d := range decls {
		names[i] = lua.LString(r.addSpec(L, d.Name, specs[i], filepath.Base(path)+": "+d.Entry))
	}
	L.Push(listTable(L, names))
	return 1
}

// expandHome replaces a leading ~ (alone or before a /) with the home
// directory, $HOME as LookupEnv sees it, as a shell would.
func (r *Runtime) expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	lookup := r.opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	home, ok := lookup("HOME")
	if !ok || home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return path // reported as a file that does not exist
		}
	}
	return filepath.Join(home, path[1:])
}
