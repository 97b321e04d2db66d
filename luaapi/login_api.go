package luaapi

import (
	"context"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Authenticator logs in to servers behind OAuth: mcp_login. Login is
// called off the loop and may block until ctx ends (the user has to act in
// a browser); what it writes to opts.Out is posted to the loop.
// *manager.Manager implements it; a Manager that does not has no
// mcp_login.
type Authenticator interface {
	Login(ctx context.Context, name string, opts manager.LoginOptions) error
}

var _ Authenticator = (*manager.Manager)(nil)

// loginTimeout bounds mcp_login by default: time for the user to finish in
// the browser and for the server to connect.
const loginTimeout = 5 * time.Minute

// mcp_login(name [, timeout_seconds = 300]) → true | false, why: run the
// OAuth login of a server (print the authorization URL and open it with
// $BROWSER or xdg-open, wait for the redirect, keep the tokens), then wait
// until it is connected.
func (r *Runtime) luaLogin(L *lua.LState) int {
	const fname = "mcp_login"
	name := checkString(L, fname, 1)
	timeout := loginTimeout
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		timeout = seconds(L, fname, 2, checkNumber(L, fname, 2))
	}
	auth, ok := r.opts.Manager.(Authenticator)
	if !ok {
		L.Push(lua.LFalse)
		L.Push(lua.LString("mcp_login: this host cannot log in to servers"))
		return 2
	}
	if server, pending := r.pendingServer(L, name); pending {
		L.Push(lua.LFalse)
		L.Push(lua.LString(pendingError(server, "login").Error()))
		return 2
	}
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := auth.Login(ctx, name, manager.LoginOptions{Out: loopWriter{r}})
		return func(*lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LFalse, lua.LString(luaErrorText(err))}
			}
			return []lua.LValue{lua.LTrue, lua.LNil}
		}
	})
}

// loopWriter writes to the runtime's output from the loop, in order, for
// work running off it.
type loopWriter struct{ r *Runtime }

func (w loopWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	w.r.postAsync(func() { _, _ = w.r.out.Write(b) })
	return len(p), nil
}
