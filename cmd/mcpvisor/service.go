package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

const serviceUsage = `Usage: mcpvisor service install [--http ADDR] [-c FILE] [--yes]
       mcpvisor service uninstall [--yes]

install writes a user service that runs mcpvisor serve --http ADDR (default
127.0.0.1:8931) at login and restarts it if it stops: a systemd user unit on
Linux (~/.config/systemd/user/mcpvisor.service), a launchd agent on macOS
(~/Library/LaunchAgents/dev.mcpvisor.serve.plist). It prints the command
that starts it; nothing is started for you. uninstall takes the file out.
`

// serviceFile is what `service install` writes on one OS: where, what,
// and the commands that start and stop it.
type serviceFile struct {
	path, content   string
	start, teardown string
}

// serviceFor is the user service for goos running exe with args.
func serviceFor(goos, home, configDir, exe string, args []string) (serviceFile, error) {
	switch goos {
	case "linux":
		quoted := make([]string, len(args)+1)
		for i, a := range append([]string{exe}, args...) {
			quoted[i] = systemdQuote(a)
		}
		return serviceFile{
			path: filepath.Join(configDir, "systemd", "user", "mcpvisor.service"),
			content: "[Unit]\nDescription=mcpvisor: your MCP servers, served to your AI clients\n" +
				"After=network.target\n\n[Service]\nExecStart=" + strings.Join(quoted, " ") + "\n" +
				"Restart=on-failure\nRestartSec=2\n# The token, if the address is not loopback:\n" +
				"# Environment=MCPVISOR_TOKEN=...\n\n[Install]\nWantedBy=default.target\n",
			start:    "systemctl --user daemon-reload && systemctl --user enable --now mcpvisor",
			teardown: "systemctl --user disable --now mcpvisor",
		}, nil
	case "darwin":
		var b strings.Builder
		for _, a := range append([]string{exe}, args...) {
			fmt.Fprintf(&b, "    <string>%s</string>\n", xmlEscape(a))
		}
		path := filepath.Join(home, "Library", "LaunchAgents", "dev.mcpvisor.serve.plist")
		return serviceFile{
			path: path,
			content: `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>dev.mcpvisor.serve</string>
  <key>ProgramArguments</key>
  <array>
` + b.String() + `  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <true/>
  <key>StandardErrorPath</key>
  <string>` + xmlEscape(filepath.Join(home, "Library", "Logs", "mcpvisor.log")) + `</string>
</dict>
</plist>
`,
			start:    "launchctl load -w " + path,
			teardown: "launchctl unload -w " + path,
		}, nil
	}
	return serviceFile{}, fmt.Errorf("no user service on %s: start mcpvisor serve --http from the Task Scheduler, or let your client start mcpvisor serve itself (mcpvisor connect)", goos)
}

// systemdQuote quotes an ExecStart word when it needs it.
func systemdQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\$%;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `$$`, `%`, `%%`)
	return `"` + r.Replace(s) + `"`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// runService is `mcpvisor service install|uninstall`.
func runService(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "install" && args[0] != "uninstall") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, serviceUsage)
			return 0
		}
		fmt.Fprint(stderr, "mcpvisor service: say install or uninstall\n\n"+serviceUsage)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("http", "127.0.0.1:8931", "")
	file := fs.String("c", "", "")
	yes := fs.Bool("yes", false, "")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serviceUsage)
			return 0
		}
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		fmt.Fprintf(stderr, "mcpvisor service: %v\n\n%s", err, serviceUsage)
		return 2
	}
	ask := &confirmer{in: bufio.NewReader(stdin), out: stdout, yes: *yes, interactive: isTerminal(stdin)}
	if err := serviceAction(verb, *addr, *file, ask, stdout); err != nil {
		fmt.Fprintf(stderr, "mcpvisor service %s: %v\n", verb, err)
		return 1
	}
	return 0
}

func serviceAction(verb, addr, file string, ask *confirmer, out io.Writer) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	configDir, err := os.UserConfigDir()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if file == "" {
		if file, err = userConfigPath(); err != nil {
			return err
		}
	}
	if file, err = filepath.Abs(file); err != nil {
		return err
	}
	svc, err := serviceFor(runtime.GOOS, home, configDir, exe, []string{"serve", "--http", addr, "-c", file})
	if err != nil {
		return err
	}
	if verb == "uninstall" {
		if err := os.Remove(svc.path); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(out, "No service file at %s.\n", svc.path)
			return nil
		} else if err != nil {
			return err
		}
		fmt.Fprintf(out, "Removed %s. If it runs, stop it: %s\n", svc.path, svc.teardown)
		return nil
	}
	before, err := readIfExists(svc.path)
	if err != nil {
		return err
	}
	if string(before) == svc.content {
		fmt.Fprintf(out, "%s is already up to date. Start it: %s\n", svc.path, svc.start)
		return nil
	}
	showDiff(out, svc.path, before, []byte(svc.content))
	okay, err := ask.ask(fmt.Sprintf("Write %s?", svc.path), true)
	if err != nil || !okay {
		return err
	}
	if err := replaceFile(svc.path, []byte(svc.content)); err != nil {
		return fmt.Errorf("write %s: %w", svc.path, err)
	}
	fmt.Fprintf(out, "Wrote %s. Start it: %s\nClients then reach http://%s/mcp (mcpvisor connect CLIENT --http http://%s/mcp).\n",
		svc.path, svc.start, addr, addr)
	return nil
}
