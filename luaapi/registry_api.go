package luaapi

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// ResourceReader lists and reads the servers' resources: mcp_resources and
// mcp_read. Resources is called on the loop and must return at once;
// ReadResource is called off the loop and may block until ctx ends.
type ResourceReader interface {
	Resources(server string) ([]manager.ResourceInfo, error)
	ReadResource(ctx context.Context, uri, server string, timeout time.Duration) (*mcp.ReadResourceResult, error)
}

// PromptGetter lists and renders the servers' prompts: mcp_prompts and
// mcp_prompt. Prompts is called on the loop (and by [Runtime.Complete])
// and must return at once; GetPrompt is called off the loop and may block
// until ctx ends.
type PromptGetter interface {
	Prompts(server string) ([]manager.PromptInfo, error)
	GetPrompt(ctx context.Context, name string, args map[string]string, timeout time.Duration) (*mcp.GetPromptResult, error)
}

// mcp_resources([server]) → list of {uri, server, name, title,
// description, mime_type, template, available} | nil, err.
func (r *Runtime) luaResources(L *lua.LState) int {
	list, err := r.resources.Resources(L.OptString(1, ""))
	if err != nil {
		return pushErr(L, err)
	}
	return pushList(L, list, resourceTable)
}

func resourceTable(L *lua.LState, res manager.ResourceInfo) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("uri", lua.LString(res.URI))
	t.RawSetString("server", lua.LString(res.Server))
	setString(t, "name", res.Name)
	setString(t, "title", res.Title)
	setString(t, "description", res.Description)
	setString(t, "mime_type", res.MIMEType)
	t.RawSetString("template", lua.LBool(res.Template))
	t.RawSetString("available", lua.LBool(res.Available))
	return t
}

// mcp_prompts([server]) → list of {name = "server.prompt", server, prompt,
// title, description, arguments = {{name, description, required}}}.
func (r *Runtime) luaPrompts(L *lua.LState) int {
	list, err := r.prompts.Prompts(L.OptString(1, ""))
	if err != nil {
		return pushErr(L, err)
	}
	return pushList(L, list, promptTable)
}

func promptTable(L *lua.LState, p manager.PromptInfo) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("name", lua.LString(p.FullName))
	t.RawSetString("server", lua.LString(p.Server))
	t.RawSetString("prompt", lua.LString(p.Name))
	setString(t, "title", p.Title)
	setString(t, "description", p.Description)
	t.RawSetString("available", lua.LBool(p.Available))
	args := make([]lua.LValue, len(p.Arguments))
	for j, a := range p.Arguments {
		at := L.NewTable()
		at.RawSetString("name", lua.LString(a.Name))
		setString(at, "description", a.Description)
		at.RawSetString("required", lua.LBool(a.Required))
		args[j] = at
	}
	t.RawSetString("arguments", listTable(L, args))
	return t
}

// mcp_read(uri [, {server = name, timeout = s}]) → {contents, text} | nil, err.
func (r *Runtime) luaRead(L *lua.LState) int {
	const fname = "mcp_read"
	uri := checkString(L, fname, 1)
	server := optString(L, fname, 2, "server")
	timeout := optSeconds(L, fname, 2, "timeout")
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		res, err := r.resources.ReadResource(ctx, uri, server, timeout)
		return func(L *lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LNil, errorTable(L, err)}
			}
			t := L.NewTable()
			var text []string
			items := make([]lua.LValue, 0, len(res.Contents))
			for _, c := range res.Contents {
				if c.Text != "" {
					text = append(text, c.Text)
				}
				item := jsonValue(L, c)
				if t, ok := item.(*lua.LTable); ok { // mime_type, as mcp_resources spells it
					if mt := t.RawGetString("mimeType"); mt != lua.LNil {
						t.RawSetString("mime_type", mt)
						t.RawSetString("mimeType", lua.LNil)
					}
				}
				items = append(items, item)
			}
			t.RawSetString("contents", listTable(L, items))
			t.RawSetString("text", lua.LString(strings.Join(text, "\n")))
			return []lua.LValue{t, lua.LNil}
		}
	})
}

// mcp_prompt(name, args [, {timeout = s}]) → {description, messages, text} | nil, err.
func (r *Runtime) luaPrompt(L *lua.LState) int {
	const fname = "mcp_prompt"
	name := checkString(L, fname, 1)
	args := map[string]string{}
	if t, ok := L.Get(2).(*lua.LTable); ok {
		t.ForEach(func(k, v lua.LValue) {
			args[k.String()] = L.ToStringMeta(v).String()
		})
	} else if L.Get(2) != lua.LNil {
		argErr(L, fname, 2, "arguments must be a table of strings like {name = \"Ada\"}")
	}
	timeout := optSeconds(L, fname, 3, "timeout")
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		res, err := r.prompts.GetPrompt(ctx, name, args, timeout)
		return func(L *lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LNil, errorTable(L, err)}
			}
			t := L.NewTable()
			setString(t, "description", res.Description)
			var text []string
			msgs := make([]lua.LValue, 0, len(res.Messages))
			for _, m := range res.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					text = append(text, tc.Text)
				}
				msgs = append(msgs, jsonValue(L, m))
			}
			t.RawSetString("messages", listTable(L, msgs))
			t.RawSetString("text", lua.LString(strings.Join(text, "\n")))
			return []lua.LValue{t, lua.LNil}
		}
	})
}

// mcp_discover([server] [, {force = true}]) → tools, errors. Without force
// it returns the cached tools; with force it re-lists every connected
// server. errors maps each server that could not be refreshed to its err.
func (r *Runtime) luaDiscover(L *lua.LState) int {
	const fname = "mcp_discover"
	server, optIdx := "", 1
	if s, ok := L.Get(1).(lua.LString); ok {
		server, optIdx = string(s), 2
	}
	force := optBool(L, optIdx, "force")
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		tools, errs, err := r.toolbox.Discover(ctx, server, force)
		costs := r.toolCosts(tools) // off the loop: counting takes a while
		return func(L *lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LNil, errorTable(L, err)}
			}
			items := make([]lua.LValue, len(tools))
			for i, t := range tools {
				items[i] = costedToolTable(L, t, costs[i])
			}
			errTable := L.NewTable()
			for name, e := range errs {
				errTable.RawSetString(name, errorTable(L, e))
			}
			return []lua.LValue{listTable(L, items), errTable}
		}
	})
}

// progressFunc turns opts.progress into a manager callback that runs the
// Lua function on the loop, as its own task, for each notification.
func (r *Runtime) progressFunc(L *lua.LState, fname string, n int) func(manager.Progress) {
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		return nil
	}
	fn, ok := t.RawGetString("progress").(*lua.LFunction)
	if !ok {
		if t.RawGetString("progress") != lua.LNil {
			argErr(L, fname, n, "progress must be a function(p) receiving {progress, total, message}")
		}
		return nil
	}
	cb := &callback{what: fname + " progress", fn: fn}
	if t, ok := r.tasks[L]; ok {
		cb.origin = t.origin
	}
	return func(p manager.Progress) {
		r.postAsync(func() {
			pt := r.state.NewTable()
			pt.RawSetString("progress", lua.LNumber(p.Progress))
			if p.Total != 0 {
				pt.RawSetString("total", lua.LNumber(p.Total))
			}
			setString(pt, "message", p.Message)
			r.run(cb, []lua.LValue{pt}) // budgeted, failures reported like a hook's
		})
	}
}

// jsonValue converts an SDK value to Lua through its JSON form.
func jsonValue(L *lua.LState, v any) lua.LValue {
	raw, err := json.Marshal(v)
	if err != nil {
		return lua.LNil
	}
	return ToLua(L, json.RawMessage(raw))
}

// optString reads opts[key] as a string; absent is "".
func optString(L *lua.LState, fname string, n int, key string) string {
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		if L.Get(n) != lua.LNil {
			argErr(L, fname, n, "options must be a table like {"+key+" = \"name\"}")
		}
		return ""
	}
	switch v := t.RawGetString(key).(type) {
	case lua.LString:
		return string(v)
	case *lua.LNilType:
		return ""
	default:
		argErr(L, fname, n, key+" must be a string, got "+v.Type().String())
	}
	return ""
}
