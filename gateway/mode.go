package gateway

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Mode is how an endpoint offers its tools to one client.
type Mode string

const (
	// ModeDirect lists every tool the endpoint serves.
	ModeDirect Mode = "direct"
	// ModeSearch lists the meta-tools search_tools, describe_tools and
	// call_tool, and the tools the user pinned, instead of the catalogue.
	ModeSearch Mode = "search"
	// ModeCode lists one tool, run_lua, which runs a Lua chunk in which
	// every tool is a function (Options.Code runs it).
	ModeCode Mode = "code"
)

// Modes are the modes, in the order they are documented.
var Modes = []Mode{ModeDirect, ModeSearch, ModeCode}

// ParseMode is the mode named s ("" is ModeDirect), or a *ModeError with
// CodeUnknownMode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeDirect, nil
	case ModeDirect, ModeSearch, ModeCode:
		return m, nil
	}
	return "", &ModeError{Code: CodeUnknownMode, Mode: s}
}

// ModeQuery is what a mode function (Options.ModeFor) is told of a client
// when its session starts.
type ModeQuery struct {
	// Client and Version are what the client gave in initialize.
	Client, Version string
	// Endpoint is the path it connected to: "/mcp", "/servers/git/mcp",
	// "/toolsets/dev/mcp".
	Endpoint string
	// Toolset is the toolset of a toolset's endpoint, else "".
	Toolset string
	// Default is the mode the client gets unless the function says
	// otherwise: the toolset's, else the gateway's.
	Default Mode
}

// ModeErrorCode classifies a *ModeError.
type ModeErrorCode string

const (
	// CodeUnknownMode: a mode that is not direct, search or code.
	CodeUnknownMode ModeErrorCode = "UNKNOWN_MODE"
	// CodeNoCodeRunner: code mode asked of a gateway given no
	// Options.Code to run the chunks.
	CodeNoCodeRunner ModeErrorCode = "NO_CODE_RUNNER"
)

// ModeError is a mode the gateway cannot serve.
// errors.Is(err, &ModeError{Code: c}) matches any ModeError with code c.
type ModeError struct {
	Code ModeErrorCode
	Mode string
}

func (e *ModeError) Error() string {
	switch e.Code {
	case CodeUnknownMode:
		return fmt.Sprintf("mode %q: unknown; the modes are direct, search and code", e.Mode)
	case CodeNoCodeRunner:
		return "mode code: this gateway has nothing to run Lua chunks with; use direct or search"
	}
	return fmt.Sprintf("mode %q: %s", e.Mode, e.Code)
}

// Is reports whether target is a *ModeError with e's code and no mode.
func (e *ModeError) Is(target error) bool {
	t, ok := target.(*ModeError)
	return ok && t.Mode == "" && t.Code == e.Code
}

// checkModes reports a default mode the options cannot serve.
func (o *Options) checkModes() error {
	m, err := ParseMode(string(o.Mode))
	if err != nil {
		return err
	}
	if m == ModeCode && o.Code == nil {
		return &ModeError{Code: CodeNoCodeRunner, Mode: string(m)}
	}
	o.Mode = m
	return nil
}

// Check reports what in the options the gateway cannot serve (a mode it
// does not know, code mode without Options.Code); New panics on it.
func (o Options) Check() error { return o.checkModes() }

// SetModeFor replaces the function that chooses the mode of each new
// client session (Options.ModeFor); nil leaves the toolset's or the
// gateway's mode. Sessions already open keep theirs.
func (g *Gateway) SetModeFor(f func(ModeQuery) Mode) {
	if f == nil {
		g.modeFor.Store(nil)
		return
	}
	g.modeFor.Store(&f)
}

// modeFunc holds the mode function; nil for none.
type modeFunc = atomic.Pointer[func(ModeQuery) Mode]

// pickMode chooses the mode of a client on ep: the mode function's
// answer, else the toolset's mode, else the gateway's. A mode the gateway
// cannot serve is logged and replaced by the next choice down (code mode
// without a runner falls back to search).
func (g *Gateway) pickMode(ep *endpoint, c Client) (m Mode) {
	m = g.opts.Mode
	q := ModeQuery{Client: c.Name, Version: c.Version, Endpoint: ep.path}
	if ep.sel == oneToolset {
		q.Toolset = ep.name
		if ts := g.toolset(ep.name); ts != nil && ts.Mode != "" {
			m = g.usable(ts.Mode, m, "toolset "+ep.name)
		}
	}
	q.Default = m
	if f := g.modeFor.Load(); f != nil {
		chosen := func() (chosen Mode) {
			defer func() {
				if p := recover(); p != nil {
					g.log.Warn("the mode function failed; the client gets the default mode", "client", c.Label(), "mode", m, "error", fmt.Sprint(p))
					chosen = ""
				}
			}()
			return (*f)(q)
		}()
		if chosen != "" {
			m = g.usable(chosen, m, "the mode function")
		}
	}
	return m
}

// usable is m if the gateway can serve it, else fallback (search for code
// mode without a runner), with a warning naming who asked.
func (g *Gateway) usable(m, fallback Mode, who string) Mode {
	p, err := ParseMode(string(m))
	if err != nil {
		g.log.Warn(who+" chose a mode that does not exist; using "+string(fallback), "error", err)
		return fallback
	}
	if p == ModeCode && g.opts.Code == nil {
		g.log.Warn(who+" chose code mode, which this gateway cannot run; using search", "error", &ModeError{Code: CodeNoCodeRunner, Mode: string(p)})
		return ModeSearch
	}
	return p
}

// modeOf is the mode of a client session on ep, chosen the first time it
// is asked and kept for the session: some clients never relist.
func (g *Gateway) modeOf(ep *endpoint, s *session) Mode {
	s.modeOnce.Do(func() { s.mode = g.pickMode(ep, s.client) })
	return s.mode
}
