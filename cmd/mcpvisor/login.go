package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// serverArgs parses `mcpvisor login|logout [-c FILE] NAME`, with the flag
// before or after the name.
func serverArgs(cmd string, args []string) (file, name string, err error) {
	fs := flag.NewFlagSet("mcpvisor "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&file, "c", "", "")
	if err := fs.Parse(args); err != nil {
		return "", "", err
	}
	if fs.NArg() > 0 {
		name = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", "", err
		}
	}
	if name == "" || fs.NArg() > 0 {
		return "", "", errors.New("give one server name")
	}
	return file, name, nil
}

// declared evaluates the config and returns the declaration of the server
// called name (compared as server names are), with the manager and
// runtime it used; close them with the returned function.
func declared(file, name string, stdout io.Writer) (*manager.Manager, luaapi.Declared, func(), error) {
	path, src, err := startupSource(file)
	if err != nil {
		return nil, luaapi.Declared{}, nil, err
	}
	bus := events.NewBus(events.Options{})
	mgr := manager.New(loginManagerOptions(bus))
	rt, err := luaapi.New(luaapi.Options{Manager: mgr, Stdout: stdout, ScriptDir: filepath.Join(filepath.Dir(path), "scripts")})
	if err != nil {
		bus.Close()
		return nil, luaapi.Declared{}, nil, err
	}
	closeAll := func() {
		rt.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.Close(ctx)
		bus.Close()
	}
	decls, err := rt.CheckConfig(context.Background(), path, src)
	if err != nil {
		closeAll()
		return nil, luaapi.Declared{}, nil, err
	}
	for _, d := range decls {
		if manager.NameKey(d.Name) == manager.NameKey(name) {
			return mgr, d, closeAll, nil
		}
	}
	closeAll()
	return nil, luaapi.Declared{}, nil, fmt.Errorf("%s declares no server %q", path, name)
}

// loginManagerOptions are the options of the manager of login and
// logout; logout of a server the config no longer declares uses their
// StateDir too, so that both find the tokens where the host keeps them.
func loginManagerOptions(bus *events.Bus) manager.Options {
	return manager.Options{Bus: bus, Version: version()}
}

// runLogin is `mcpvisor login [-c FILE] NAME`: run the OAuth login of a
// server of the config, keep its tokens in the state directory (where a
// running host finds them) and connect it once to show it works.
func runLogin(args []string, stdout, stderr io.Writer) int {
	file, name, err := serverArgs("login", args)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor login: %v\nusage: mcpvisor login [-c FILE] NAME\n", err)
		return 2
	}
	mgr, d, closeAll, err := declared(file, name, stdout)
	if err != nil {
		printError(stderr, err)
		return 1
	}
	defer closeAll()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mgr.Add(d.Name, d.Spec); err != nil {
		printError(stderr, err)
		return 1
	}
	if err := mgr.Login(ctx, d.Name, manager.LoginOptions{Out: stdout}); err != nil {
		fmt.Fprintf(stderr, "mcpvisor login: %v\n", err)
		return 1
	}
	st, err := mgr.Status(d.Name)
	if err == nil && st.State == manager.StateConnected {
		fmt.Fprintf(stdout, "Connected to %s (%d tools).\n", d.Name, st.Tools)
	}
	return 0
}

// runLogout is `mcpvisor logout [-c FILE] NAME`: forget the server's
// tokens and client registration. A server the config no longer declares
// is forgotten by the name given.
func runLogout(args []string, stdout, stderr io.Writer) int {
	file, name, err := serverArgs("logout", args)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor logout: %v\nusage: mcpvisor logout [-c FILE] NAME\n", err)
		return 2
	}
	var had bool
	if mgr, d, closeAll, derr := declared(file, name, io.Discard); derr == nil {
		// Declared: the manager forgets the tokens where it keeps them. A
		// disabled copy of the server is enough; nothing connects.
		defer closeAll()
		name = d.Name
		spec := d.Spec
		spec.Disabled = true
		if err = mgr.Add(d.Name, spec); err == nil {
			had, err = mgr.Logout(d.Name)
		}
	} else {
		k := oauth.NewKeeper(oauth.KeeperOptions{Dir: loginManagerOptions(nil).StateDir})
		had, err = k.Logout(manager.NameKey(name), name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor logout: %v\n", err)
		return 1
	}
	if !had {
		fmt.Fprintf(stdout, "Nothing stored for %s.\n", name)
		return 0
	}
	fmt.Fprintf(stdout, "Logged out of %s: its tokens are forgotten.\n", name)
	return 0
}
