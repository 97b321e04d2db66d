package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/mcpvisor/mcpvisor/internal/clientconf"
)

const connectUsage = `Usage: mcpvisor connect CLIENT [flags]
       mcpvisor disconnect CLIENT [--config FILE] [--restore [-c FILE]] [--yes]

connect adds mcpvisor to an AI client's MCP config, so the client sees every
server of your startup.lua through it; disconnect takes it out again. Both
show the change and ask before writing, and keep a copy of the client's file
next to it (FILE.bak-YYYYMMDD-HHMMSS). Restart the client afterwards.

CLIENT is one of: %s.

  --config FILE   the client's config file (default: where the client keeps
                  it on this OS)
  -c FILE         the startup.lua the client's mcpvisor runs (default: your
                  user config, written by mcpvisor init; made now if missing)
  --http URL      reach a running gateway (mcpvisor serve --http) at URL
                  instead of starting mcpvisor serve over stdio; when
                  MCPVISOR_TOKEN is set, the client is told to send the token
                  from its own MCPVISOR_TOKEN variable
  --toolset NAME  serve only that toolset (mcp_toolset in startup.lua)
  --move          also take the client's other servers into startup.lua, so
                  mcpvisor keeps them alive, and out of the client's file
  --restore       (disconnect) undo --move: put the servers it took back into
                  the client's file, as its backups hold them, and take their
                  declarations out of startup.lua (a copy of which is kept)
  --yes           write without asking
`

// connectFlags are the flags of connect and disconnect.
type connectFlags struct {
	client                       *clientconf.Client
	clientFile, startup, httpURL string
	toolset                      string
	move, restore, yes           bool
}

func parseConnect(cmd string, args []string) (connectFlags, error) {
	var f connectFlags
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.clientFile, "config", "", "")
	fs.BoolVar(&f.yes, "yes", false, "")
	if cmd == "connect" {
		fs.StringVar(&f.startup, "c", "", "")
		fs.StringVar(&f.httpURL, "http", "", "")
		fs.StringVar(&f.toolset, "toolset", "", "")
		fs.BoolVar(&f.move, "move", false, "")
	} else {
		fs.StringVar(&f.startup, "c", "", "")
		fs.BoolVar(&f.restore, "restore", false, "")
	}
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") { // CLIENT before its flags
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	switch {
	case name == "":
		return f, errors.New("name the client to " + cmd)
	case len(rest) > 0:
		return f, fmt.Errorf("unexpected argument %q", rest[0])
	}
	var err error
	f.client, err = clientconf.Lookup(name)
	return f, err
}

// runConnect is `mcpvisor connect` and `mcpvisor disconnect`.
func runConnect(cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseConnect(cmd, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, connectUsage, strings.Join(clientconf.IDs(), ", "))
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor %s: %v\nRun 'mcpvisor %s --help' for usage.\n", cmd, err, cmd)
		return 2
	}
	ask := &confirmer{in: bufio.NewReader(stdin), out: stdout, yes: f.yes, interactive: isTerminal(stdin)}
	if cmd == "connect" {
		err = connectClient(f, ask, stdout)
	} else {
		err = disconnectClient(f, ask, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor %s %s: %v\n", cmd, f.client.ID, err)
		return 1
	}
	return 0
}

func (f *connectFlags) path() (string, error) {
	if f.clientFile != "" {
		return f.clientFile, nil
	}
	env, err := clientconf.HostEnv(runtime.GOOS)
	if err != nil {
		return "", err
	}
	return f.client.Path(env), nil
}

func connectClient(f connectFlags, ask *confirmer, out io.Writer) error {
	path, err := f.path()
	if err != nil {
		return err
	}
	entry, startup, err := f.entry(out)
	if err != nil {
		return err
	}
	shape, err := f.client.Shape(entry)
	if err != nil {
		return err
	}
	before, err := readIfExists(path)
	if err != nil {
		return err
	}
	after, err := f.client.Set(before, clientconf.EntryName, shape)
	if err != nil {
		return fmt.Errorf("%s: %w; add this entry by hand under %q: %v", path, err, clientconf.EntryName, shape)
	}
	var moved []string
	var movedLua string
	if f.move {
		if moved, movedLua, after, err = f.moveServers(path, startup, after); err != nil {
			return err
		}
	}
	if string(after) == string(before) {
		fmt.Fprintf(out, "%s (%s) already runs mcpvisor this way; nothing to change.\n", f.client.Name, path)
		return nil
	}
	showDiff(out, path, before, after)
	if movedLua != "" {
		fmt.Fprintf(out, "and at the end of %s:\n%s", startup, movedLua)
	}
	okay, err := ask.ask(fmt.Sprintf("Write %s?", path), true)
	if err != nil || !okay {
		if err == nil {
			fmt.Fprintln(out, "Nothing written.")
		}
		return err
	}
	if movedLua != "" { // first: a server is never in neither file
		if err := appendFile(startup, movedLua); err != nil {
			return err
		}
	}
	backup, err := writeWithBackup(path, before, after)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Added mcpvisor to %s (%s).", f.client.Name, path)
	if backup != "" {
		fmt.Fprintf(out, " The old file is kept as %s.", backup)
	}
	if len(moved) > 0 {
		fmt.Fprintf(out, "\nMoved %s into %s.", strings.Join(moved, ", "), startup)
	}
	fmt.Fprintf(out, "\nRestart %s to see mcpvisor's tools.\n", f.client.Name)
	return nil
}

// startupPath is the absolute path of the startup.lua the client's
// mcpvisor runs: -c, else the user's config.
func (f *connectFlags) startupPath() (string, error) {
	startup := f.startup
	if startup == "" {
		var err error
		if startup, err = userConfigPath(); err != nil {
			return "", err
		}
	}
	return filepath.Abs(startup)
}

// entry is how the client reaches mcpvisor, and the startup.lua a stdio
// entry runs (made with the defaults if missing).
func (f *connectFlags) entry(out io.Writer) (clientconf.Entry, string, error) {
	startup, err := f.startupPath()
	if err != nil {
		return clientconf.Entry{}, "", err
	}
	if f.httpURL != "" {
		u, err := url.Parse(f.httpURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return clientconf.Entry{}, "", fmt.Errorf("--http wants the gateway's URL, like http://127.0.0.1:8931/mcp; got %q", f.httpURL)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/mcp"
			if f.toolset != "" {
				u.Path = "/toolsets/" + url.PathEscape(f.toolset) + "/mcp"
			}
		}
		e := clientconf.Entry{URL: u.String()}
		if os.Getenv("MCPVISOR_TOKEN") != "" {
			e.TokenEnv = "MCPVISOR_TOKEN"
			fmt.Fprintln(out, "The client will send the token from its own MCPVISOR_TOKEN environment variable.")
		}
		return e, startup, nil
	}
	if _, err := os.Stat(startup); errors.Is(err, fs.ErrNotExist) {
		if err := writeNew(startup, []byte(defaultStartup)); err != nil {
			return clientconf.Entry{}, "", fmt.Errorf("write %s: %w", startup, err)
		}
		fmt.Fprintf(out, "Wrote %s (the demo server; add yours there, or run mcpvisor init to import them).\n", startup)
	}
	exe, err := os.Executable()
	if err != nil {
		return clientconf.Entry{}, "", fmt.Errorf("find the mcpvisor program: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	args := []string{"serve", "-c", startup}
	if f.toolset != "" {
		args = append(args, "--toolset", f.toolset)
	}
	return clientconf.Entry{Command: exe, Args: args}, startup, nil
}

// moveServers takes the client's other servers out of data and returns
// their declarations for startup.lua; names startup.lua already declares
// are taken out of the client and not declared twice.
func (f *connectFlags) moveServers(path, startup string, data []byte) ([]string, string, []byte, error) {
	decls, err := clientServers(f.client, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", data, nil
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("--move: %w", err)
	}
	current, _ := os.ReadFile(startup)
	var lua strings.Builder
	var names, already []string
	for _, d := range decls {
		if data, _, err = f.client.Delete(data, d.Name); err != nil {
			return nil, "", nil, fmt.Errorf("--move: take %s out of %s: %w", d.Name, path, err)
		}
		if strings.Contains(string(current), "mcp_add("+luaString(d.Name)) {
			already = append(already, luaString(d.Name))
			continue
		}
		lua.WriteString(luaDeclaration(d.Name, d.Raw))
		names = append(names, d.Name)
	}
	if len(names)+len(already) == 0 {
		return nil, "", data, nil
	}
	// The block's first lines say where its servers came from, which is
	// how disconnect --restore finds them again.
	head := "\n" + movedMarker(f.client, path) +
		fmt.Sprintf("-- mcpvisor disconnect %s --restore puts them back.\n", f.client.ID)
	if len(already) > 0 {
		head += alsoPrefix + strings.Join(already, ", ") + "\n"
	}
	return names, head + lua.String(), data, nil
}

func disconnectClient(f connectFlags, ask *confirmer, out io.Writer) error {
	path, err := f.path()
	if err != nil {
		return err
	}
	before, err := readIfExists(path)
	if err != nil {
		return err
	}
	after, found, err := f.client.Delete(before, clientconf.EntryName)
	if err != nil {
		return fmt.Errorf("%s: %w; take the %q entry out by hand", path, err, clientconf.EntryName)
	}
	var r restorePlan
	if f.restore {
		if r, err = f.planRestore(path, after, out); err != nil {
			return err
		}
		after = r.client
	}
	if !found && len(r.names) == 0 {
		fmt.Fprintf(out, "%s (%s) has no mcpvisor entry; nothing to change.\n", f.client.Name, path)
		return nil
	}
	showDiff(out, path, before, after)
	if len(r.names) > 0 {
		showDiff(out, r.startup, r.luaBefore, r.luaAfter)
	}
	okay, err := ask.ask(fmt.Sprintf("Write %s?", path), true)
	if err != nil || !okay {
		if err == nil {
			fmt.Fprintln(out, "Nothing written.")
		}
		return err
	}
	// The client's file first: a server is never in neither file.
	backup, err := writeWithBackup(path, before, after)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Took mcpvisor out of %s (%s)", f.client.Name, path)
	if backup != "" {
		fmt.Fprintf(out, "; the old file is kept as %s", backup)
	}
	fmt.Fprintln(out, ".")
	if len(r.names) == 0 {
		if !f.restore {
			fmt.Fprintf(out, "Servers an earlier connect --move took into startup.lua stay there; mcpvisor disconnect %s --restore puts them back.\n", f.client.ID)
		}
		return nil
	}
	luaBackup, err := writeWithBackup(r.startup, r.luaBefore, r.luaAfter)
	if err != nil {
		return fmt.Errorf("%s has %s back, but their declarations are still in %s: %w", path, strings.Join(r.names, ", "), r.startup, err)
	}
	fmt.Fprintf(out, "Put %s back into it and took them out of %s (the old one is kept as %s).\n", strings.Join(r.names, ", "), r.startup, luaBackup)
	return nil
}

func readIfExists(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// writeWithBackup keeps the file's old content (if any) as
// PATH.bak-YYYYMMDD-HHMMSS, then writes the new one; it returns the
// backup's path.
func writeWithBackup(path string, before, after []byte) (string, error) {
	backup := ""
	if before != nil {
		stamp := time.Now().Format("20060102-150405")
		backup = path + ".bak-" + stamp
		for i := 2; ; i++ {
			err := writeNew(backup, before)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("keep a copy of %s: %w", path, err)
			}
			backup = fmt.Sprintf("%s.bak-%s-%d", path, stamp, i)
		}
	}
	if err := replaceFile(path, after); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return backup, nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// showDiff prints the change to path as a unified diff.
func showDiff(out io.Writer, path string, before, after []byte) {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: path, ToFile: path, Context: 2,
	})
	fmt.Fprint(out, diff)
	if !strings.HasSuffix(diff, "\n") {
		fmt.Fprintln(out)
	}
}
