package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// checkUsage is `mcpvisor check --help` and `mcpvisor help check`.
const checkUsage = `usage: mcpvisor check [-c FILE] [--tools [--timeout DURATION] [--mode MODE] [--meta-prefix P]]

Evaluate and validate the config without starting anything: print the
servers it declares and what would keep each from starting here (a program
not on PATH, a missing cwd). Exit 1 on errors, else 0.

  -c FILE               the config (default as mcpvisor itself finds it)
  --tools               then start the servers as serve does, wait for them
                        to settle, and print what their tools cost a model
                        in tokens: each server's tool definitions, and the
                        tools/list of /mcp and of each toolset in each mode
                        (direct, search, code). A server that fails is
                        shown with its error; the exit code is still 0.
                        The servers are stopped before check exits; the
                        config's mcp_serve listens nowhere.
  --timeout DURATION    with --tools, how long to wait for the servers to
                        settle (default 30s); those still connecting then
                        are shown as such
  --mode MODE           with --tools, the mode /mcp is served in (as serve
                        --mode), shown as the endpoints' default
  --meta-prefix P       with --tools, the meta-tools' prefix (as serve)
`

// defaultCheckTimeout is check --tools' default --timeout.
const defaultCheckTimeout = 30 * time.Second

// runCheck is `mcpvisor check [-c FILE] [--tools]`: evaluate the config
// into its declarations without connecting anything, print them with what
// would keep each from starting here, and exit 0, or print the error with
// file:line and exit 1 (also when a declared process cannot start). With
// --tools it then starts the servers and prints what their tools cost
// (checkTools).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpvisor check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("c", "", "")
	tools := fs.Bool("tools", false, "")
	timeout := fs.Duration("timeout", defaultCheckTimeout, "")
	mode := fs.String("mode", "", "")
	prefix := fs.String("meta-prefix", "", "")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, checkUsage)
		return 0
	}
	switch {
	case err != nil:
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case *timeout <= 0:
		err = fmt.Errorf("--timeout must be more than 0, got %v", *timeout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor check: %v\nRun 'mcpvisor check --help' for usage.\n", err)
		return 2
	}
	var cfg config
	if *tools {
		// The host's settings as serve's flags have them, but for these.
		serveArgs := []string{"--no-watch", "--mode", *mode, "--meta-prefix", *prefix}
		if *file != "" {
			serveArgs = append(serveArgs, "-c", *file)
		}
		if cfg, err = parseFlags(serveArgs, io.Discard); err != nil {
			fmt.Fprintf(stderr, "mcpvisor check: %v\nRun 'mcpvisor check --help' for usage.\n", err)
			return 2
		}
	}
	path, src, code := checkConfig(*file, stdout, stderr)
	if code != 0 || !*tools {
		return code
	}
	return checkTools(cfg, *timeout, path, src, stdout, stderr)
}

// checkConfig is check without --tools; it returns the config it checked
// and the exit code.
func checkConfig(file string, stdout, stderr io.Writer) (path, src string, code int) {
	path, src, err := startupSource(file)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return path, src, 1
	}
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	mgr := manager.New(manager.Options{Bus: bus})
	rt, err := luaapi.New(luaapi.Options{Manager: mgr, Stdout: stdout, ScriptDir: filepath.Join(filepath.Dir(path), "scripts")})
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return path, src, 1
	}
	defer func() {
		rt.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.Close(ctx)
	}()
	decls, err := rt.CheckConfig(context.Background(), path, src)
	if err != nil {
		printError(stderr, err)
		return path, src, 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tENDPOINT\tDECLARED AT")
	for _, d := range decls {
		endpoint := d.Spec.Endpoint()
		if d.Spec.Disabled {
			endpoint += " (disabled)"
		}
		// A config may be shared or imported: its text is shown, never
		// acted on, and a tab in it cannot shift the columns.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", textsafe.Line(d.Name), textsafe.Line(string(d.Spec.Transport)),
			textsafe.Line(endpoint), textsafe.Line(d.Where))
	}
	tw.Flush()
	errs, warns := reportUnstartable(stdout, decls)
	note := ""
	if file == "" && !fileExists(path) {
		note = " (no ./startup.lua: this is the built-in default)"
	}
	verdict := "OK"
	switch {
	case errs > 0:
		verdict = fmt.Sprintf("%d %s", errs, plural(errs, "error", "errors"))
	case warns > 0:
		verdict = fmt.Sprintf("OK with %d %s", warns, plural(warns, "warning", "warnings"))
	}
	fmt.Fprintf(stdout, "%s: %s, %d server(s)%s\n", textsafe.Line(path), verdict, len(decls), note)
	if errs > 0 {
		return path, src, 1
	}
	return path, src, 0
}

// reportUnstartable prints, under the table, each declared process that
// could not start on this host as it is now (a program not on PATH, a
// missing cwd, a command line written as one string), with the fix: an
// error, or a warning for a disabled server, which nothing starts yet.
func reportUnstartable(w io.Writer, decls []luaapi.Declared) (errs, warns int) {
	for _, d := range decls {
		err := d.Spec.Startable(d.Name)
		if err == nil {
			continue
		}
		level := "error"
		if d.Spec.Disabled {
			level = "warning"
			warns++
		} else {
			errs++
		}
		fmt.Fprintf(w, "%s: %s: %s\n", textsafe.Line(d.Where), level, textsafe.Line(err.Error()))
	}
	return errs, warns
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
