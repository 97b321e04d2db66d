package main

import (
	"context"
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

// runCheck is `mcpvisor check [-c FILE]`: evaluate the config into its
// declarations without connecting anything, print them with what would
// keep each from starting here, and exit 0, or print the error with
// file:line and exit 1 (also when a declared process cannot start).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpvisor check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("c", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: mcpvisor check [-c FILE]")
		return 2
	}
	path, src, err := startupSource(*file)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
	}
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	mgr := manager.New(manager.Options{Bus: bus})
	rt, err := luaapi.New(luaapi.Options{Manager: mgr, Stdout: stdout, ScriptDir: filepath.Join(filepath.Dir(path), "scripts")})
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
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
		return 1
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
	if *file == "" && !fileExists(path) {
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
		return 1
	}
	return 0
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
