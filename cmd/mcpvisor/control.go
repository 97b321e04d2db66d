package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/control"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/manager"
)

// controlBackend answers `mcpvisor status` and friends for this host.
type controlBackend struct {
	h      *host
	config string
}

func (b controlBackend) Snapshot() control.Snapshot {
	s := control.Snapshot{PID: os.Getpid(), Started: b.h.started, Version: version(), Config: b.config,
		HTTP: b.h.gateway.address(), Servers: []control.ServerRow{}, Clients: []control.ClientRow{}}
	for _, st := range b.h.mgr.Statuses() {
		row := control.ServerRow{Name: st.Name, State: st.State.String(), Transport: string(st.Transport),
			Protocol: st.Protocol, Tools: st.Tools, Resources: st.Resources, Prompts: st.Prompts, Sessions: len(st.Sessions),
			LastError: st.LastError}
		if st.State != manager.StateConnected {
			row.NextAttempt = st.NextAttempt
		}
		s.Servers = append(s.Servers, row)
	}
	if gw := b.h.gateway.peek(); gw != nil {
		for _, c := range gw.Clients() {
			s.Clients = append(s.Clients, control.ClientRow{Name: c.Name, Version: c.Version,
				Transport: c.Transport, Endpoint: c.Endpoint, Since: c.Since})
		}
	}
	return s
}

func (b controlBackend) Act(name string, action control.Action) error {
	var err error
	switch action {
	case control.Reconnect:
		err = b.h.mgr.Reconnect(name)
	case control.Enable:
		err = b.h.mgr.Enable(name)
	case control.Disable:
		err = b.h.mgr.Disable(name)
	}
	var me *manager.Error
	if errors.As(err, &me) && me.Code == manager.CodeServerNotFound {
		return fmt.Errorf("no server %q here (servers: %s)", name, strings.Join(b.h.mgr.Names(), ", "))
	}
	if r, ok := manager.RemedyOf(err); ok {
		if words := cliRemedy(r, b.config); words != "" {
			return fmt.Errorf("%w; %s", err, words)
		}
	}
	return err
}

// listenControl opens the host's control socket; a failure is logged and
// costs only `mcpvisor status`.
func (h *host) listenControl(config string) {
	dir, err := stateDir()
	if err == nil {
		h.control, err = control.Listen(control.Dir(dir), controlBackend{h: h, config: config})
	}
	if err != nil {
		h.log.Warn("mcpvisor status will not find this instance", "error", err)
	}
}

const statusUsage = `Usage: mcpvisor status [--addr ADDR] [--json]
       mcpvisor reconnect|enable|disable NAME [--addr ADDR]

status (or ls) shows the servers and clients of your running mcpvisor (the
REPL, serve, or serve --http), found by itself: each listens on a socket only
you can reach. reconnect, enable and disable act on one of its servers.

  --addr ADDR   a gateway elsewhere (serve --http ADDR), with the token from
                MCPVISOR_TOKEN or --token-file
  --token-file FILE
                the gateway's token, read from FILE
  --json        print the status as JSON
`

// runControl is `mcpvisor status|ls|reconnect|enable|disable`.
func runControl(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	tokenFile := fs.String("token-file", "", "")
	asJSON := fs.Bool("json", false, "")
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, statusUsage)
		return 0
	}
	if err == nil && name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	action := control.Action(cmd)
	acting := slices.Contains(control.Actions, action)
	switch {
	case err != nil:
	case acting && name == "":
		err = fmt.Errorf("name the server to %s", cmd)
	case !acting && name != "":
		err = fmt.Errorf("unexpected argument %q", name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor %s: %v\n\n%s", cmd, err, statusUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	clients, err := controlClients(*addr, *tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor %s: %v\n", cmd, err)
		return 1
	}
	if acting {
		if len(clients) > 1 {
			fmt.Fprintf(stderr, "mcpvisor %s: %d instances are running; the newest is used (give --addr for another)\n", cmd, len(clients))
		}
		if err := clients[len(clients)-1].Act(ctx, name, action); err != nil {
			fmt.Fprintf(stderr, "mcpvisor %s %s: %v\n", cmd, name, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s asked\n", name, cmd)
		return 0
	}
	code := 0
	for i, c := range clients {
		s, err := c.Snapshot(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "mcpvisor %s: %v\n", cmd, err)
			code = 1
			continue
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(s)
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printSnapshot(stdout, s, time.Now())
	}
	return code
}

// controlClients are the instances to ask: the gateway at addr, else every
// running instance of this user (oldest first).
func controlClients(addr, tokenFile string) ([]*control.Client, error) {
	if addr != "" {
		token, err := serveToken(tokenFile)
		if err != nil {
			return nil, err
		}
		c, err := control.Remote(addr, token)
		if err != nil {
			return nil, err
		}
		return []*control.Client{c}, nil
	}
	dir, err := stateDir()
	if err != nil {
		return nil, err
	}
	paths := control.Instances(control.Dir(dir))
	if len(paths) == 0 {
		return nil, errors.New("no running mcpvisor found (start one: mcpvisor, or mcpvisor serve --http ADDR; for a gateway elsewhere give --addr)")
	}
	sortByAge(paths)
	out := make([]*control.Client, len(paths))
	for i, p := range paths {
		out[i] = control.Socket(p)
	}
	return out, nil
}

func sortByAge(paths []string) {
	mod := func(p string) time.Time {
		st, err := os.Stat(p)
		if err != nil {
			return time.Time{}
		}
		return st.ModTime()
	}
	slices.SortFunc(paths, func(a, b string) int { return mod(a).Compare(mod(b)) })
}

func printSnapshot(w io.Writer, s control.Snapshot, now time.Time) {
	where := fmt.Sprintf("mcpvisor %s, pid %d, up %s", s.Version, s.PID, now.Sub(s.Started).Round(time.Second))
	if s.Config != "" {
		where += ", " + s.Config
	}
	if s.HTTP != "" {
		where += ", http://" + s.HTTP + "/mcp"
	}
	fmt.Fprintln(w, where)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tPROTOCOL\tTOOLS\tRESOURCES\tPROMPTS\tNOTE")
	for _, r := range s.Servers {
		note := r.LastError
		if !r.NextAttempt.IsZero() && r.NextAttempt.After(now) {
			note = fmt.Sprintf("retry in %s; %s", r.NextAttempt.Sub(now).Round(time.Second), note)
		}
		if r.Sessions > 0 {
			note = strings.TrimSpace(fmt.Sprintf("%d client session(s) %s", r.Sessions, note))
		}
		protocol := r.Protocol
		if protocol == "" {
			protocol = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", textsafe.Line(r.Name), r.State, textsafe.Line(protocol), r.Tools, r.Resources, r.Prompts,
			textsafe.Line(truncate(note, 100)))
	}
	tw.Flush()
	if len(s.Clients) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tTRANSPORT\tENDPOINT\tSINCE")
	for _, c := range s.Clients {
		name := c.Name
		if c.Version != "" {
			name += "/" + c.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", textsafe.Line(name), c.Transport, textsafe.Line(c.Endpoint), now.Sub(c.Since).Round(time.Second))
	}
	tw.Flush()
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
