package luaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// ChunkEnv is what a chunk run by [RunChunk] can reach: the tools it may
// call, how to call them and how to search them. Call is the only way out
// of the sandbox; whatever applies to a direct call (validation, filters,
// sessions, events) applies there.
type ChunkEnv struct {
	// Tools are the tools the chunk sees, as tools.<Server>.<Tool>.
	Tools []ChunkTool
	// Call calls a tool by the name it is exposed under (ChunkTool.Name).
	// It is called on RunChunk's goroutine, one call at a time, with a
	// context that ends when the run does.
	Call func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
	// Search answers search_tools. If nil, search_tools raises an error
	// saying search is not available.
	Search func(query string, limit int, server string) []ChunkHit
}

// ChunkTool is one tool a chunk may call.
type ChunkTool struct {
	// Name is the tool's name as the client sees it, what Call takes.
	Name string
	// Server and Tool are the server's name and the server's own name of
	// the tool: the chunk calls it as tools.<Server>.<Tool>{…}.
	Server, Tool string
	Description  string
	InputSchema  json.RawMessage
}

// ChunkHit is one answer of ChunkEnv.Search.
type ChunkHit struct {
	Name, Server, Description, Why string
}

// ChunkLimits bound one run. The zero value gives the defaults.
type ChunkLimits struct {
	// SliceBudget bounds how long the chunk's Lua runs without making a
	// tool call, as a hook's slice is bounded between two suspensions.
	// If zero, 100ms.
	SliceBudget time.Duration
	// Timeout bounds the whole run, tool calls included. If zero,
	// DefaultChunkTimeout.
	Timeout time.Duration
	// MaxCalls bounds the tool calls of one run. If zero,
	// DefaultChunkCalls; negative, none.
	MaxCalls int
	// MaxOutput bounds the bytes of text a run returns (what it printed,
	// then what it returned); past it the text is cut and a note says how
	// much was left out. If zero, DefaultChunkOutput.
	MaxOutput int
	// MemoryLimit stops a run that makes the host's memory grow past it,
	// as Options.MemoryLimit does chunks. If zero, DefaultMemoryLimit;
	// negative, none.
	MemoryLimit int64
}

// Defaults of ChunkLimits.
const (
	DefaultChunkTimeout     = 60 * time.Second
	DefaultChunkCalls       = 100
	DefaultChunkOutput      = 16 << 10
	defaultChunkSliceBudget = 100 * time.Millisecond
)

func (l ChunkLimits) withDefaults() ChunkLimits {
	if l.SliceBudget <= 0 {
		l.SliceBudget = defaultChunkSliceBudget
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultChunkTimeout
	}
	if l.MaxCalls == 0 {
		l.MaxCalls = DefaultChunkCalls
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultChunkOutput
	}
	if l.MemoryLimit == 0 {
		l.MemoryLimit = DefaultMemoryLimit
	}
	return l
}

// maxChunkBytes bounds the code of a chunk. Compiling is out of reach of
// the CPU budget, and 600 KB of nested table constructors took 4.5 s to
// be refused; chunks a model writes are a few KB.
const maxChunkBytes = 128 << 10

// chunkName names the chunk in messages: "run_lua:3: …".
const chunkName = "run_lua"

// RunChunk runs code, Lua source from a model or a person, in a sandbox
// made for this run alone, and returns what it printed and returned as a
// tool result. The sandbox has the tools of env as tools.<server>.<tool>,
// search_tools, describe, call_tool and json, and none of io, os, require,
// debug, load or dofile. Every way the run can fail — a syntax or runtime
// error, a budget of limits, a call of an unknown tool, a tool's error
// the chunk did not catch — is an isError result whose text is the output
// so far and a message saying what stopped it; the next run is not
// affected.
//
// The error is non-nil only when ctx ended before the run did (the client
// cancelled, the host is shutting down): the run is stopped, in-flight
// calls included, and the error, a *ChunkError of code ChunkCancelled,
// wraps ctx's cause.
//
// The Lua state belongs to the calling goroutine for the run; env.Call
// runs on it too. Runs share nothing, and may run concurrently.
func RunChunk(ctx context.Context, code string, env ChunkEnv, limits ChunkLimits) (*mcp.CallToolResult, error) {
	out, err := runChunk(ctx, code, env, limits)
	var ce *ChunkError
	if errors.As(err, &ce) && ce.Code == ChunkCancelled {
		return nil, err
	}
	res := &mcp.CallToolResult{}
	text := out
	if err != nil {
		res.IsError = true
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		// The message may carry a chunk's or a tool's text: it is held to
		// the output limit too.
		msg := outputBuffer{max: limits.withDefaults().MaxOutput}
		msg.WriteString("error: " + err.Error())
		text += msg.String()
	}
	res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	return res, nil
}

// runChunk runs code and returns its output, cut to the limit, and what
// stopped it, a *ChunkError.
func runChunk(ctx context.Context, code string, env ChunkEnv, limits ChunkLimits) (out string, err error) {
	limits = limits.withDefaults()
	runCtx, cancelRun := context.WithTimeoutCause(ctx, limits.Timeout, errChunkTimeout)
	defer cancelRun()
	// The Lua VM and the tool calls watch luaCtx: it ends with the run,
	// and when a limit stops the chunk (its cause says which).
	luaCtx, stop := context.WithCancelCause(runCtx)
	defer stop(nil)
	c := &chunkRun{env: env, limits: limits, ctx: luaCtx, stop: stop, out: outputBuffer{max: limits.MaxOutput}, faults: map[string]ChunkCode{}}
	c.index()
	defer func() {
		if p := recover(); p != nil {
			out = c.out.String()
			if ae, ok := p.(*lua.ApiError); ok {
				// gopher-lua's own failures (its stacks full) can escape
				// the protected call: still the chunk's doing.
				err = &ChunkError{Code: ChunkRuntime, Message: renderErrorValue(ae.Object), Cause: ae}
				return
			}
			err = &ChunkError{Code: ChunkInternal, Message: fmt.Sprintf("internal error while running the chunk: %v", p)}
		}
	}()
	if err := c.run(code); err != nil {
		return c.out.String(), err
	}
	return c.out.String(), nil
}

// chunkRun is one run: its state and what it counts. It belongs to the
// goroutine of RunChunk.
type chunkRun struct {
	env    ChunkEnv
	limits ChunkLimits
	ctx    context.Context
	stop   context.CancelCauseFunc
	L      *lua.LState
	slice  *time.Timer // stops the chunk when a slice runs out
	calls  int
	out    outputBuffer
	trace  string // traceback of the error that ended the run
	at     string // and the file:line it was raised at
	// faults are the errors the sandbox's functions raised, by message,
	// with what they mean: the run's error says so when one ends it.
	faults   map[string]ChunkCode
	byName   map[string]*ChunkTool            // by exposed name
	byServer map[string]map[string]*ChunkTool // by server, then the server's tool name
	servers  []string                         // in env order
	memory   *memoryWatch
	task     *task // what the memory watch stops
}

// run compiles and runs code with the limits armed, renders what it
// returned, and says what stopped it.
func (c *chunkRun) run(code string) error {
	if len(code) > maxChunkBytes {
		return &ChunkError{Code: ChunkTooLarge, Message: fmt.Sprintf(
			"the chunk is %d bytes; the limit is %d KiB: send shorter code, and let tools fetch the data", len(code), maxChunkBytes>>10)}
	}
	c.L = newChunkState(c)
	defer c.L.Close()
	fn, err := c.L.Load(strings.NewReader(code), chunkName)
	if err != nil {
		return &ChunkError{Code: ChunkSyntax, Message: "syntax error: " + syntaxError(err).Message, Cause: err}
	}
	stopMemory := c.watchMemory()
	defer stopMemory()
	c.slice = time.AfterFunc(c.limits.SliceBudget, func() { c.stop(errBudget) })
	defer c.slice.Stop()
	c.L.SetContext(c.ctx)
	defer c.L.RemoveContext()
	c.L.Push(fn)
	err = c.L.PCall(0, lua.MultRet, c.L.NewFunction(c.onError))
	if err == nil {
		// What it returned is rendered under the same limits: a __tostring
		// may loop or fail too.
		vals := make([]lua.LValue, c.L.GetTop())
		for i := range vals {
			vals[i] = c.L.Get(i + 1)
		}
		c.L.SetTop(0)
		c.L.Push(c.L.NewFunction(func(L *lua.LState) int { c.render(L, vals); return 0 }))
		err = c.L.PCall(0, 0, c.L.NewFunction(c.onError))
	}
	if cause := context.Cause(c.ctx); cause != nil {
		// A limit, the timeout or the caller stopped the run: say that,
		// whatever the chunk made of the errors it saw meanwhile.
		return c.stopped(cause)
	}
	if err != nil {
		return c.failed(err)
	}
	return nil
}

// onError is the handler of the run's protected call: it keeps the
// traceback of the error that ends the chunk.
func (c *chunkRun) onError(L *lua.LState) int {
	c.trace, c.at = traceback(L), where(L)
	L.Push(L.Get(1))
	return 1
}

// watchMemory starts a watchdog of the host's memory for this run, unless
// the limit is off, and returns what stops it.
func (c *chunkRun) watchMemory() func() {
	if c.limits.MemoryLimit < 0 {
		return func() {}
	}
	c.memory = &memoryWatch{limit: uint64(c.limits.MemoryLimit), started: make(chan struct{}, 1)}
	c.task = &task{cancel: func() { c.stop(ErrMemoryLimit) }}
	watches.Store(c.L.G, c.memory)
	stop, done := make(chan struct{}), make(chan struct{})
	go c.memory.watch(stop, done)
	c.memory.begin(c.task)
	return func() {
		c.memory.end()
		close(stop)
		<-done
		watches.Delete(c.L.G)
	}
}

// stopped is the error of a run stopped from outside the chunk's code.
func (c *chunkRun) stopped(cause error) *ChunkError {
	at := ""
	if c.at != "" {
		at = " at " + c.at
	}
	switch {
	case errors.Is(cause, ErrMemoryLimit):
		c.task.trace = c.trace
		me := c.memory.memoryError(c.task)
		return &ChunkError{Code: ChunkMemory, Message: me.Message, Cause: me}
	case errors.Is(cause, errBudget):
		return &ChunkError{Code: ChunkCPUBudget, Cause: cause, Message: fmt.Sprintf(
			"stopped%s: the chunk ran Lua for %s without making a tool call (the CPU budget of Lua code between calls); a loop that never ends?",
			at, c.limits.SliceBudget)}
	case errors.Is(cause, errChunkTimeout):
		return &ChunkError{Code: ChunkTimeout, Cause: cause, Message: fmt.Sprintf(
			"stopped%s: the run took longer than %s (its time limit, tool calls included)", at, c.limits.Timeout)}
	case errors.Is(cause, errCallCap):
		return &ChunkError{Code: ChunkCallCap, Cause: cause, Message: fmt.Sprintf(
			"stopped%s: the chunk made more than %d tool calls (the limit per run); do the work in fewer calls or over several runs", at, c.limits.MaxCalls)}
	}
	return &ChunkError{Code: ChunkCancelled, Cause: cause, Message: "stopped: the call was cancelled"}
}

// failed is the error of a chunk that raised one it did not catch.
func (c *chunkRun) failed(err error) *ChunkError {
	msg, code := err.Error(), ChunkRuntime
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		msg = renderErrorValue(ae.Object)
		if s, ok := ae.Object.(lua.LString); ok {
			if fc, ok := c.faults[string(s)]; ok {
				code = fc
			}
		}
	}
	if tb := (&Error{Message: msg, Traceback: c.trace}).ShownTraceback(); tb != "" {
		msg += "\n" + tb
	}
	return &ChunkError{Code: code, Message: msg, Cause: err}
}
