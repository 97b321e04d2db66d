// Command mcpvisor keeps a person's MCP servers connected and at hand.
// See `mcpvisor --help` and README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

const usage = `mcpvisor keeps your MCP servers connected and lets you use their tools from Lua.

Usage:
  mcpvisor [flags]          run startup.lua, then a REPL (or stdin as a script)
  mcpvisor [flags] run FILE.lua [args]
                           run startup.lua, then FILE.lua as a script (- for
                           stdin); args are in arg, as lua gives them
  mcpvisor init             write your config (startup.lua in your config
                           directory) and offer to import the servers of
                           the AI clients it finds (--yes, --no-import)
  mcpvisor connect CLIENT   add mcpvisor to an AI client's config
                           (claude-desktop, claude-code, cursor, vscode,
                           windsurf, codex): see mcpvisor connect --help
  mcpvisor disconnect CLIENT
                           take it out again
  mcpvisor status           show the servers and clients of your running
                           mcpvisor (also: ls); --addr ADDR for a gateway
                           elsewhere
  mcpvisor reconnect|enable|disable NAME
                           act on a server of your running mcpvisor
  mcpvisor service install [--http ADDR]
                           run serve --http at login: a systemd user unit
                           or a launchd agent (uninstall takes it out)
  mcpvisor check [-c FILE]  evaluate and validate the config without starting
                           anything; print the servers it declares and what
                           would keep each from starting here (a program not
                           on PATH, a missing cwd); exit 1 on errors. With
                           --tools, then start the servers and print what
                           their tools cost a model in tokens, per server
                           and per endpoint in each mode: mcpvisor help check
  mcpvisor login [-c FILE] NAME
                           log in to an OAuth server of the config: show the
                           authorization URL and open it ($BROWSER, else
                           xdg-open), wait for the browser, keep the tokens
                           (a running mcpvisor picks them up) and connect
  mcpvisor logout [-c FILE] NAME
                           forget a server's tokens
  mcpvisor serve [flags]    serve every server to AI clients as one MCP server:
                           on stdin/stdout (the command a client starts), or
                           with --http ADDR on streamable HTTP and SSE
  mcpvisor demo-server      run the built-in demo MCP server on stdin/stdout
  mcpvisor help             show this help
  mcpvisor --version        print the version and the commit it was built from

Flags:
  -c FILE               config to run at startup (default ./startup.lua; if it
                        does not exist, your config as mcpvisor init writes it
                        (startup.lua in your config directory); if that does
                        not exist either, the built-in default that declares
                        the demo server)
  -e CODE               run CODE after the config as one chunk, print what it
                        returns, shut down and exit (0, or 1 on error)
  --wait DURATION       how long -e, run and a piped script wait, at most,
                        for every server to have had its first say
                        (connected, failed, backing off, disabled or waiting
                        for a slot or a login) before they start, and how
                        long a gateway client's first lists wait for it
                        (default 5s; 0: start, and answer, at once); the
                        REPL starts at once
  --config-budget DURATION
                        how long the config may run Lua without finishing
                        (time waiting in mcp_wait, sleep or a call does not
                        count) before it is stopped with an error naming
                        the file and line (default 5s; 0: no limit); at
                        start, the servers it declared before are kept
  --log-level LEVEL     debug, info, warn or error (default info at the REPL,
                        warn with -e, run or a piped script)
  --log-format FORMAT   text or json (default text)
  --no-watch            do not reload the config when it changes on disk
  --max-connections N   connect at most N servers at once (default 0: no
                        cap); the others wait in "connecting" until a slot
                        comes free: a failed connect, an idle close, a lost
                        session, mcp_disable or a removal
  --max-connecting N    make at most N connection attempts (spawn or dial
                        and handshake) at once, whether or not --max-
                        connections is set (default 4 per core, at least 8
                        and at most 64; 0: no cap); the others wait in
                        "connecting" for their turn, in declaration order
  --hud                 show the live status block (HUD) at the top of the
                        terminal: a line per server with its state, tools,
                        latency, retry countdown and last error (the default
                        at an interactive REPL; needs stdout to be a terminal)
  --no-hud              start without it (mcp_hud(true) shows it later)
  --http ADDR           serve the gateway on ADDR (e.g. 127.0.0.1:8931):
                        /mcp, /servers/NAME/mcp, /toolsets/NAME/mcp, /sse;
                        beside the REPL, or instead of stdio with serve
  --token-file FILE     require "Authorization: Bearer <token>" on HTTP, the
                        token read from FILE (or set MCPVISOR_TOKEN); needed
                        to bind an address that is not loopback
                        (MCPVISOR_VIEW_TOKEN, if set, is a second token that
                        may only view the web console at /ui)
  --name-budget N       the longest tool or prompt name the gateway offers
                        on /mcp and the toolsets, 16 to 128 (default 49, for
                        Claude Code: it shows a tool to its model as
                        mcp__<name it knows mcpvisor by>__<tool>, which must
                        fit 64 characters; give 64 minus that prefix);
                        mcp_name_budget gives chosen clients another
  --no-status-tool      leave the tool mcpvisor_status off /mcp (the resource
                        mcpvisor://status stays): what each server is doing,
                        why it is down and when it is retried, for the model
  --max-sessions N      gateway client sessions open at once (default 1000);
                        beyond it initialize is refused, never an open
                        session closed
  --session-idle DURATION
                        close an HTTP client session that sends no request
                        for this long (default 10m)
  --fast-path on|off    answer tools/call over streamable HTTP without the
                        go-sdk where it can (stdio servers, clients before
                        protocol 2026-07-28, no progress asked); default
                        $MCPVISOR_FASTPATH, else on
  --max-client-calls N  requests one client may have in flight upstream
                        (default 64; 0: no cap); beyond it they are refused
  --shutdown-grace DURATION
                        on SIGTERM or Ctrl-C, how long the gateway's calls
                        in flight may finish before they are cancelled and
                        answered with an error (default 10s); then the
                        servers stop
  --mode MODE           how the gateway offers tools to clients: direct (every
                        tool, the default), search (search_tools,
                        describe_tools, call_tool and pinned tools instead of
                        the catalogue) or code (one run_lua tool whose Lua
                        chunk calls the tools); see docs/gateway.md
  --meta-prefix P       start the names of those meta-tools with P (e.g.
                        "mcpvisor_"), for clients that need them told apart
  --code-timeout DURATION
                        how long one run_lua chunk may take, its tool calls
                        included (default 60s)
  --code-calls N        the tool calls one run_lua chunk may make (default
                        100)
  --code-output BYTES   the text one run_lua chunk may send back; past it the
                        text is cut with a note (default 16384)
  --server NAME         (serve) serve one server under its own names
  --toolset NAME        (serve) serve one toolset (mcp_toolset)

Modes:
  With -e, CODE runs once and mcpvisor exits.
  With run FILE.lua, or when stdin is not a terminal, the file or stdin is
  one script, as lua runs it: its locals live to its end, nothing is echoed
  and what it returns is not printed; on an error it stops, prints
  file:line: message and mcpvisor exits 1. Piped stdin that pauses for
  100 ms after a complete statement runs what has arrived so far, so a
  program can drive mcpvisor line by line.
  Otherwise, when stdin is a terminal, an interactive Lua REPL starts: type
  Lua, or a bare expression to print its value; Ctrl-C cancels the running
  chunk, Ctrl-D exits.
  Unless -e or --no-watch is given, the config is reloaded whenever it is
  saved: only servers whose declaration changed are touched, and a broken
  edit changes nothing (the error is logged with file:line).

Output: results and print() go to stdout; logs go to stderr. At the REPL,
logs go to $XDG_STATE_HOME/mcpvisor/mcpvisor.log (~/.local/state/mcpvisor/
mcpvisor.log), and the terminal shows only the warnings and errors the HUD
does not, a failure that repeats once.

Examples:
  mcpvisor -e 'assert(mcp_wait("demo", "connected")); return mcp_call("demo.echo", {text = "hi"}).text'
  echo 'print(#mcp_tools())' | mcpvisor
  mcpvisor run script.lua hello                         # arg[1] == "hello"
  mcpvisor -c ~/.config/mcpvisor/startup.lua
  mcpvisor serve -c ~/.config/mcpvisor/startup.lua      # in a client's MCP config
  mcpvisor serve --http 127.0.0.1:8931                  # http://127.0.0.1:8931/mcp

In Lua (see docs/lua-api.md):
  declare  mcp_add, mcp_remove, mcp_import
  control  mcp_enable, mcp_disable, mcp_reconnect, mcp_login
  look     mcp_status, mcp_servers, mcp_events, mcp_wait, mcp_metrics,
           mcp_hud, mcp_hud_model
  use      mcp_tools, mcp_call, mcp_call_cb, mcp_discover, mcp_resources,
           mcp_read, mcp_prompts, mcp_prompt
  react    mcp_on, mcp_off, mcp_after, mcp_every, sleep
  serve    mcp_serve, mcp_toolset, mcp_name_budget, mcp_client_mode,
           mcp_clients, mcp_tool
  answer   mcp_handle, mcp_roots (what servers ask: forms, completions, roots)
  data     json.encode, json.decode, json.null, MCPVISOR
`

func main() {
	proc.RunShimIfAsked() // a server's shim never gets further
	tuneGC()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// defaultGCPercent is the host's GOGC unless the user sets one: the MCP
// call path is GC-bound (the SDK allocates ~140 KB per call), and 400 cut
// the host's CPU per call by ~40% for ~10 MiB more heap (BENCHMARKS.md §4).
const defaultGCPercent = 400

// tuneGC applies defaultGCPercent, leaving a GOGC from the environment
// alone. It also applies to demo-server, the same binary.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// run is main without os.Exit, returning the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "demo-server":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := demo.Serve(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(stderr, "mcpvisor demo-server:", err)
				return 1
			}
			return 0
		case "check":
			return runCheck(args[1:], stdout, stderr)
		case "init":
			return runInit(args[1:], stdin, stdout, stderr)
		case "connect", "disconnect":
			return runConnect(args[0], args[1:], stdin, stdout, stderr)
		case "service":
			return runService(args[1:], stdin, stdout, stderr)
		case "status", "ls", "reconnect", "enable", "disable":
			return runControl(args[0], args[1:], stdout, stderr)
		case "login":
			return runLogin(args[1:], stdout, stderr)
		case "logout":
			return runLogout(args[1:], stdout, stderr)
		case "serve":
			cfg, err := parseFlags(args[1:], stderr)
			if err == nil {
				err = cfg.forServe()
			}
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return 0
			}
			if err != nil {
				fmt.Fprintf(stderr, "mcpvisor serve: %v\nRun 'mcpvisor --help' for usage.\n", err)
				return 2
			}
			return runServe(cfg, stdin, stdout, stderr)
		case "help":
			if len(args) > 1 && args[1] == "check" {
				fmt.Fprint(stdout, checkUsage)
				return 0
			}
			fmt.Fprint(stdout, usage)
			return 0
		case "--version", "-version", "version":
			printVersion(stdout)
			return 0
		}
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err == nil && (cfg.server != "" || cfg.toolset != "") {
		err = errors.New("--server and --toolset choose what `mcpvisor serve` serves; use them with serve")
	}
	if err == nil && cfg.http != "" {
		var token string
		if token, err = serveToken(cfg.tokenFile); err == nil {
			err = checkServeAddr(cfg.http, token) // before any server starts
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\nRun 'mcpvisor --help' for usage.\n", err)
		return 2
	}
	return runHost(cfg, stdin, stdout, stderr)
}

// config is the parsed command line.
type config struct {
	file      string // "" means ./startup.lua or the built-in default
	code      string
	hasCode   bool
	logLevel  string
	levelSet  bool // --log-level was given
	logFormat string
	noWatch   bool
	hud       hudMode
	// maxConnections caps the servers connected at once; 0: no cap.
	maxConnections int
	// maxConnecting caps the connection attempts in flight, as
	// manager.Options.MaxConnecting: 0 the default, less than 0 no cap.
	maxConnecting int
	// The gateway: HTTP address, token file, and (serve only) what to serve.
	http, tokenFile string
	server, toolset string
	// The gateway's bounds on its clients, and the grace its calls in
	// flight get at shutdown.
	maxSessions, maxClientCalls int
	sessionIdle, shutdownGrace  time.Duration
	fastPath                    string // "on", "off" or "" (the environment's)
	// wait bounds how long a run that is not interactive gives the servers
	// to settle before its code starts, and how long a gateway client's
	// first lists wait for them; 0 starts at once.
	wait time.Duration
	// configBudget bounds the time the config runs Lua, as
	// luaapi.Options.ConfigBudget: 0 the default, less than 0 none.
	configBudget time.Duration
	// nameBudget is the gateway's longest tool or prompt name.
	nameBudget int
	// noStatusTool leaves the tool mcpvisor_status off the gateway.
	noStatusTool bool
	// mode is how the gateway offers its tools to clients by default;
	// metaPrefix starts the names of its meta-tools.
	mode       gateway.Mode
	metaPrefix string
	// code bounds each run_lua chunk of a client in code mode.
	codeLimits luaapi.ChunkLimits
	// script is `run FILE [args]`: the file ("-" for stdin) and the whole
	// command line with the file's index in it, for the script's arg.
	script      string
	argv        []string
	scriptIndex int
	// noControl keeps a long run from opening the control socket
	// `mcpvisor status` finds it by: check --tools is no mcpvisor to show.
	noControl bool
}

// forServe checks the flags of `mcpvisor serve`.
func (c *config) forServe() error {
	switch {
	case c.hasCode:
		return errors.New("-e runs Lua and exits; serve runs until its client goes (drop -e)")
	case c.server != "" && c.toolset != "":
		return errors.New("--server and --toolset each choose what to serve; give one")
	case c.hud == hudOn:
		return errors.New("serve has no HUD: stdout carries MCP (use mcpvisor --http ADDR for a REPL and HUD beside the gateway)")
	}
	return nil
}

// hudMode is what --hud and --no-hud asked for.
type hudMode int

const (
	hudAuto hudMode = iota // shown at an interactive REPL
	hudOn
	hudOff
)

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("mcpvisor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.file, "c", "", "")
	fs.StringVar(&c.code, "e", "", "")
	fs.StringVar(&c.logLevel, "log-level", "info", "")
	fs.StringVar(&c.logFormat, "log-format", "text", "")
	fs.BoolVar(&c.noWatch, "no-watch", false, "")
	fs.IntVar(&c.maxConnections, "max-connections", 0, "")
	fs.IntVar(&c.maxConnecting, "max-connecting", 0, "")
	fs.StringVar(&c.http, "http", "", "")
	fs.StringVar(&c.tokenFile, "token-file", "", "")
	fs.StringVar(&c.server, "server", "", "")
	fs.StringVar(&c.toolset, "toolset", "", "")
	fs.DurationVar(&c.wait, "wait", defaultWait, "")
	fs.DurationVar(&c.configBudget, "config-budget", luaapi.DefaultConfigBudget, "")
	fs.IntVar(&c.nameBudget, "name-budget", gateway.DefaultNameBudget, "")
	fs.BoolVar(&c.noStatusTool, "no-status-tool", false, "")
	mode := fs.String("mode", string(gateway.ModeDirect), "")
	fs.StringVar(&c.metaPrefix, "meta-prefix", "", "")
	fs.DurationVar(&c.codeLimits.Timeout, "code-timeout", luaapi.DefaultChunkTimeout, "")
	fs.IntVar(&c.codeLimits.MaxCalls, "code-calls", luaapi.DefaultChunkCalls, "")
	fs.IntVar(&c.codeLimits.MaxOutput, "code-output", luaapi.DefaultChunkOutput, "")
	fs.IntVar(&c.maxSessions, "max-sessions", gateway.DefaultMaxSessions, "")
	fs.IntVar(&c.maxClientCalls, "max-client-calls", gateway.DefaultMaxClientCalls, "")
	fs.DurationVar(&c.sessionIdle, "session-idle", gateway.DefaultSessionTimeout, "")
	fs.StringVar(&c.fastPath, "fast-path", "", "")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", defaultShutdownGrace, "")
	var hudFlag, noHUDFlag bool
	fs.BoolVar(&hudFlag, "hud", false, "")
	fs.BoolVar(&noHUDFlag, "no-hud", false, "")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.Arg(0) == "run" { // flags may follow run too
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return c, err
		}
		if err := c.runScript(args, fs.Args()); err != nil {
			return c, err
		}
	}
	levelSet, connectingSet := false, false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "e":
			c.hasCode = true
		case "log-level":
			levelSet = true
		case "max-connecting":
			connectingSet = true
		}
	})
	switch {
	case hudFlag && noHUDFlag:
		return c, errors.New("--hud and --no-hud contradict each other; give one")
	case hudFlag:
		c.hud = hudOn
	case noHUDFlag:
		c.hud = hudOff
	}
	if c.maxConnections < 0 {
		return c, fmt.Errorf("--max-connections must be 0 (no cap) or more, got %d", c.maxConnections)
	}
	switch {
	case c.maxConnecting < 0:
		return c, fmt.Errorf("--max-connecting must be 0 (no cap) or more, got %d", c.maxConnecting)
	case connectingSet && c.maxConnecting == 0:
		c.maxConnecting = -1 // asked for no cap; not given at all means the default
	}
	if c.nameBudget < gateway.MinNameBudget || c.nameBudget > gateway.MaxNameBudget {
		return c, fmt.Errorf("--name-budget must be from %d to %d characters, got %d", gateway.MinNameBudget, gateway.MaxNameBudget, c.nameBudget)
	}
	if c.wait < 0 {
		return c, fmt.Errorf("--wait must be 0 (start at once) or more, got %v", c.wait)
	}
	var err error
	if c.mode, err = gateway.ParseMode(*mode); err != nil {
		return c, fmt.Errorf("--mode: %w", err)
	}
	if c.metaPrefix != "" && (!expose.ValidName(c.metaPrefix) || len(c.metaPrefix) > 16) {
		return c, fmt.Errorf("--meta-prefix must be 1 to 16 of the characters a-z A-Z 0-9 _ -, got %q", c.metaPrefix)
	}
	switch {
	case c.codeLimits.Timeout <= 0:
		return c, fmt.Errorf("--code-timeout must be more than 0, got %v", c.codeLimits.Timeout)
	case c.codeLimits.MaxCalls < 1:
		return c, fmt.Errorf("--code-calls must be 1 or more, got %d", c.codeLimits.MaxCalls)
	case c.codeLimits.MaxOutput < 256:
		return c, fmt.Errorf("--code-output must be 256 bytes or more, got %d", c.codeLimits.MaxOutput)
	}
	switch {
	case c.maxSessions < 1:
		return c, fmt.Errorf("--max-sessions must be 1 or more, got %d", c.maxSessions)
	case c.maxClientCalls < 0:
		return c, fmt.Errorf("--max-client-calls must be 0 (no cap) or more, got %d", c.maxClientCalls)
	case c.sessionIdle <= 0:
		return c, fmt.Errorf("--session-idle must be more than 0, got %v", c.sessionIdle)
	case c.fastPath != "" && c.fastPath != "on" && c.fastPath != "off":
		return c, fmt.Errorf("--fast-path must be on or off, got %q", c.fastPath)
	case c.shutdownGrace < 0:
		return c, fmt.Errorf("--shutdown-grace must be 0 (cancel at once) or more, got %v", c.shutdownGrace)
	}
	switch {
	case c.configBudget < 0:
		return c, fmt.Errorf("--config-budget must be 0 (no limit) or more, got %v", c.configBudget)
	case c.configBudget == 0:
		c.configBudget = -1 // asked for no limit
	}
	if c.hasCode && c.script != "" {
		return c, errors.New("-e and run each give the code to run; give one")
	}
	c.levelSet = levelSet
	if !levelSet && (c.hasCode || c.script != "") {
		c.logLevel = quietLevel
	}
	if c.script == "" && fs.NArg() > 0 {
		if strings.HasSuffix(fs.Arg(0), ".lua") {
			return c, fmt.Errorf("unexpected argument %q; to run a config, use -c %s", fs.Arg(0), fs.Arg(0))
		}
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch c.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
	}
	switch c.logFormat {
	case "text", "json":
	default:
		return c, fmt.Errorf("--log-format must be text or json, got %q", c.logFormat)
	}
	return c, nil
}
