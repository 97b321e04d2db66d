// Command fakemcp is a fault-injecting MCP server over stdio (newline-delimited
// JSON-RPC). It exists only for mcpvisor's tests: every misbehaviour the host
// must survive can be switched on with a flag.
//
// It speaks just enough MCP for a client to connect: initialize,
// notifications/initialized, tools/list, tools/call, ping. server/discover (the
// go-sdk v1.8.0 client's first probe) and every other request get -32601
// Method not found, so clients fall back to initialize; with --discover it
// answers server/discover too, and a client can speak 2026-07-28.
//
// Tools: echo {text}, slow {ms}, t0..t{N-1} {text} with --tools=N, and the
// tool named by --hang-tool if it is not one of those.
//
// Flags (both -flag and --flag work):
//
//	--name=NAME                 serverInfo.name (default "fakemcp")
//	--tools=N                   add tools t0..t{N-1}, each echoes {text}
//	--protocol-version=V        answer initialize with V verbatim (default: echo
//	                            the client's version if known, else 2025-11-25)
//	--crash-after=N|DUR         exit after N answered tools/call (0: as soon as
//	                            notifications/initialized arrives), or DUR after start;
//	                            writes "fakemcp: crashing" to stderr first
//	--exit-code=K               exit code for --crash-after (default 1)
//	--hang-initialize           read stdin, answer nothing
//	--slow-initialize=DUR       answer initialize only after DUR
//	--hang-tool=NAME            tools/call NAME never returns (until cancelled)
//	--slow=DUR                  every tools/call waits DUR first
//	--garbage-stdout=MODE       before-init: "Starting server..." at start;
//	                            after-init: after the first tools/call response;
//	                            interleaved: after every message
//	--huge-message=SIZE         echo answers a text of SIZE bytes (KiB, MiB, GiB, KB, MB, GB)
//	--reply=TEXT                echo and t0..t{N-1} answer TEXT instead of {text}; Go
//	                            escapes in it are decoded (\x1b, \u202e, \n), and
//	                            {pid} becomes the server's process id
//	--invalid-utf8              tools/call results carry raw invalid UTF-8 bytes
//	--partial-frame             first tools/call writes `{"jsonrpc":"2.0",` and stdout stalls
//	--stderr-flood=SIZE|continuous
//	                            SIZE bytes of stderr per tools/call, or an endless stream
//	--notification-flood=RATE   notifications/message at RATE per second ("10k/s",
//	                            "500") once initialized
//	--dup-response-id           every tools/call response is sent twice
//	--unsolicited-response      a response with id 999999 precedes every tools/call response
//	--ping=ok|unsupported|hang  ping handling (unsupported: -32601)
//	--discover=off|ok|stall     server/discover handling (off, the default: -32601;
//	                            ok: answered, offering 2026-07-28; stall: the first
//	                            is answered, every later one never)
//	--ignore-sigterm            log SIGTERM to stderr and keep running
//	--no-exit-on-stdin-eof      keep running after stdin closes (default: cancel
//	                            requests in flight, write finished answers, exit 0)
//	--spawn-grandchild          start a sleeping grandchild in the same process group,
//	                            print "fakemcp: grandchild pid=<pid>" to stderr
//	--grandchild-holds-stdout   the grandchild inherits stdout (implies --spawn-grandchild)
//	--record=FILE               append one line per received message: "initialize id=1",
//	                            "notifications/initialized", "tools/call id=3",
//	                            "notifications/cancelled requestId=3",
//	                            "notifications/progress progressToken=\"t\" progress=0.5"
//	--ask                       add tools ask {method, params} (sends that request to
//	                            the client, answers {"result"|"error"} as JSON text)
//	                            and capabilities (the client's, from initialize);
//	                            ask_later keeps a request, release sends the kept
//	                            ones outside their calls, late_answers lists what
//	                            came back for them
//	--pidfile=FILE              append own pid and a newline at start (one line per
//	                            process, so restarts of a server add lines)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	name            string
	tools           int
	protocolVersion string

	crashAfterN   int           // -1: off
	crashAfterDur time.Duration // 0: off
	exitCode      int

	hangInitialize bool
	slowInitialize time.Duration
	hangTool       string
	ask            bool
	slow           time.Duration

	garbage       string // "", before-init, after-init, interleaved
	hugeMessage   int64
	reply         *string // nil: echo the text argument
	invalidUTF8   bool
	partialFrame  bool
	dupResponse   bool
	unsolicited   bool
	notifyPerSec  float64
	stderrPerCall int64
	stderrFlood   bool // continuous

	ping     string // ok, unsupported, hang
	discover string // off, ok, stall

	ignoreSIGTERM         bool
	noExitOnEOF           bool
	spawnGrandchild       bool
	grandchildHoldsStdout bool
	grandchild            bool // hidden: we are the grandchild

	record  string
	pidfile string
}

func parseFlags(args []string) (*config, error) {
	c := &config{crashAfterN: -1}
	fs := flag.NewFlagSet("fakemcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.name, "name", "fakemcp", "")
	fs.IntVar(&c.tools, "tools", 0, "")
	fs.StringVar(&c.protocolVersion, "protocol-version", "", "")
	fs.Func("crash-after", "", func(v string) error {
		if n, err := strconv.Atoi(v); err == nil {
			if n < 0 {
				return errors.New("must be >= 0")
			}
			c.crashAfterN = n
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a call count or a positive duration, got %q", v)
		}
		c.crashAfterDur = d
		return nil
	})
	fs.IntVar(&c.exitCode, "exit-code", 1, "")
	fs.BoolVar(&c.hangInitialize, "hang-initialize", false, "")
	fs.DurationVar(&c.slowInitialize, "slow-initialize", 0, "")
	fs.StringVar(&c.hangTool, "hang-tool", "", "")
	fs.BoolVar(&c.ask, "ask", false, "")
	fs.DurationVar(&c.slow, "slow", 0, "")
	fs.Func("garbage-stdout", "", func(v string) error {
		switch v {
		case "before-init", "after-init", "interleaved":
			c.garbage = v
			return nil
		}
		return fmt.Errorf("want before-init, after-init or interleaved, got %q", v)
	})
	fs.Func("huge-message", "", func(v string) (err error) {
		c.hugeMessage, err = parseSize(v)
		return err
	})
	fs.Func("reply", "", func(v string) error {
		text, err := strconv.Unquote(`"` + strings.ReplaceAll(v, `"`, `\"`) + `"`)
		if err != nil {
			return fmt.Errorf("want text with Go escapes, got %q: %v", v, err)
		}
		c.reply = &text
		return nil
	})
	fs.BoolVar(&c.invalidUTF8, "invalid-utf8", false, "")
	fs.BoolVar(&c.partialFrame, "partial-frame", false, "")
	fs.BoolVar(&c.dupResponse, "dup-response-id", false, "")
	fs.BoolVar(&c.unsolicited, "unsolicited-response", false, "")
	fs.Func("notification-flood", "", func(v string) (err error) {
		c.notifyPerSec, err = parseRate(v)
		return err
	})
	fs.Func("stderr-flood", "", func(v string) (err error) {
		if v == "continuous" {
			c.stderrFlood = true
			return nil
		}
		c.stderrPerCall, err = parseSize(v)
		return err
	})
	fs.Func("ping", "", func(v string) error {
		switch v {
		case "ok", "unsupported", "hang":
			c.ping = v
			return nil
		}
		return fmt.Errorf("want ok, unsupported or hang, got %q", v)
	})
	fs.Func("discover", "", func(v string) error {
		switch v {
		case "off", "ok", "stall":
			c.discover = v
			return nil
		}
		return fmt.Errorf("want off, ok or stall, got %q", v)
	})
	fs.BoolVar(&c.ignoreSIGTERM, "ignore-sigterm", false, "")
	fs.BoolVar(&c.noExitOnEOF, "no-exit-on-stdin-eof", false, "")
	fs.BoolVar(&c.spawnGrandchild, "spawn-grandchild", false, "")
	fs.BoolVar(&c.grandchildHoldsStdout, "grandchild-holds-stdout", false, "")
	fs.BoolVar(&c.grandchild, "grandchild", false, "")
	fs.StringVar(&c.record, "record", "", "")
	fs.StringVar(&c.pidfile, "pidfile", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.tools < 0 {
		return nil, errors.New("-tools must be >= 0")
	}
	if c.ping == "" {
		c.ping = "ok"
	}
	if c.grandchildHoldsStdout {
		c.spawnGrandchild = true
	}
	return c, nil
}

// parseSize parses "1024", "64KiB", "20MiB", "1GiB", "10KB", "1MB".
func parseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	}
	num, mult := v, int64(1)
	for _, u := range units {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = s, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("want a size like 1024, 256KiB or 20MiB, got %q", v)
	}
	return n * mult, nil
}

// parseRate parses "500", "500/s", "10k/s".
func parseRate(v string) (float64, error) {
	s := strings.TrimSuffix(v, "/s")
	mult := 1.0
	if t, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = t, 1000
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || r*mult > 1e6 {
		return 0, fmt.Errorf("want a rate like 100/s or 10k/s, got %q", v)
	}
	return r * mult, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakemcp: %v\n", err)
		os.Exit(2)
	}
	if cfg.grandchild {
		sleepForever()
	}
	if cfg.pidfile != "" {
		if err := appendLine(cfg.pidfile, strconv.Itoa(os.Getpid())); err != nil {
			fmt.Fprintf(os.Stderr, "fakemcp: %v\n", err)
			os.Exit(2)
		}
	}
	if cfg.ignoreSIGTERM {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		go func() {
			for range sigs {
				fmt.Fprintln(os.Stderr, "fakemcp: ignoring SIGTERM")
			}
		}()
	}
	if cfg.spawnGrandchild {
		spawnGrandchild(cfg.grandchildHoldsStdout)
	}
	s, err := newServer(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakemcp: %v\n", err)
		os.Exit(2)
	}
	if cfg.stderrFlood {
		go floodStderrForever()
	}
	if cfg.crashAfterDur > 0 {
		time.AfterFunc(cfg.crashAfterDur, s.crash)
	}
	if cfg.garbage == "before-init" {
		s.writeRaw([]byte("Starting server...\n"))
	}
	s.serve(os.Stdin)
	// stdin is closed.
	if cfg.noExitOnEOF {
		fmt.Fprintln(os.Stderr, "fakemcp: stdin closed, staying alive")
		sleepForever()
	}
	s.drain(time.Second)
	os.Exit(0)
}

// appendLine appends line and a newline to the file at path, creating it.
// One write of a short line to an O_APPEND file is atomic, so processes
// sharing a file do not interleave.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// spawnGrandchild re-executes this binary with the hidden --grandchild flag.
// The grandchild stays in our process group (so a group kill reaches it) and,
// unless holdStdout, has /dev/null for all standard streams.
func spawnGrandchild(holdStdout bool) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakemcp: grandchild: %v\n", err)
		os.Exit(2)
	}
	cmd := exec.Command(exe, "--grandchild")
	if holdStdout {
		cmd.Stdout = os.Stdout
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "fakemcp: grandchild: %v\n", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "fakemcp: grandchild pid=%d\n", cmd.Process.Pid)
	go cmd.Wait() // reap it if it dies while we live
}

// floodLine is one 1 KiB line of stderr noise.
var floodLine = []byte("fakemcp: flood " + strings.Repeat("E", 1024-len("fakemcp: flood ")-1) + "\n")

// floodStderr writes n bytes of noise to stderr (blocking if nobody drains it).
func floodStderr(n int64) {
	for n > 0 {
		chunk := floodLine
		if n < int64(len(chunk)) {
			chunk = chunk[len(chunk)-int(n):]
		}
		if _, err := os.Stderr.Write(chunk); err != nil {
			return
		}
		n -= int64(len(chunk))
	}
}

func floodStderrForever() {
	buf := []byte(strings.Repeat(string(floodLine), 16))
	for {
		if _, err := os.Stderr.Write(buf); err != nil {
			return
		}
	}
}
