package luaapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// What servers ask crosses into Lua as plain tables, like everything else:
// the request's own fields in snake_case, what they hold (a schema, a
// message's content) as the server sent it.

// elicitTable is the req an elicitation handler gets: {mode, message,
// requested_schema} for a form, {mode, message, url, elicitation_id} for
// a URL.
func elicitTable(L *lua.LState, p *mcp.ElicitParams) *lua.LTable {
	t := L.CreateTable(0, 4)
	t.RawSetString("mode", lua.LString(ask.Mode(p)))
	t.RawSetString("message", lua.LString(p.Message))
	if p.RequestedSchema != nil {
		if b, err := json.Marshal(p.RequestedSchema); err == nil {
			t.RawSetString("requested_schema", ToLua(L, json.RawMessage(b)))
		}
	}
	setString(t, "url", p.URL)
	setString(t, "elicitation_id", p.ElicitationID)
	return t
}

// elicitResult reads an elicitation handler's answer, {action = "accept" |
// "decline" | "cancel", content = {…}}, checking accepted content against
// the requested schema here (as the manager does before sending), where
// the error can say so plainly to the handler's author.
func elicitResult(v lua.LValue, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("it must return {action = \"accept\" | \"decline\" | \"cancel\", content = {…}}, nil to pass, or nil, err; got %s", v.Type())
	}
	res := &mcp.ElicitResult{}
	var content lua.LValue = lua.LNil
	var bad error
	t.ForEach(func(k, v lua.LValue) {
		switch key := lua.LVAsString(k); {
		case bad != nil:
		case key == "action":
			s, _ := v.(lua.LString)
			res.Action = string(s)
		case key == "content":
			content = v
		default:
			bad = fmt.Errorf("unknown field %s in its answer; an answer is {action = …, content = {…}}", key)
		}
	})
	if bad != nil {
		return nil, bad
	}
	switch res.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, fmt.Errorf("action must be \"accept\", \"decline\" or \"cancel\", got %s", lua.LVAsString(t.RawGetString("action")))
	}
	if res.Action != "accept" {
		return res, nil
	}
	if content != lua.LNil {
		obj, err := contentObject(content)
		if err != nil {
			return nil, err
		}
		res.Content = obj
	}
	// Fields the handler leaves out take the form's defaults, as the host
	// would fill them in anyway; the check is of what is sent.
	res = ask.WithDefaults(p, res)
	if res.Content == nil {
		return res, nil
	}
	if err := ask.CheckElicitation(p, res); err != nil {
		return nil, err
	}
	return res, nil
}

// contentObject converts accepted content to the JSON object it is sent
// as (numbers as JSON gives them, as the schema check expects).
func contentObject(v lua.LValue) (map[string]any, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("content must be a table of the form's fields, got %s", v.Type())
	}
	if t.Len() > 0 {
		return nil, errors.New("content must be a table of the form's fields by name, not a list")
	}
	raw, err := FromLua(t)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	obj := map[string]any{}
	if string(b) != "[]" { // an empty table
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	}
	return obj, nil
}

// samplingRenames are the request's top-level fields as sampling handlers
// see them.
var samplingRenames = [][2]string{
	{"systemPrompt", "system_prompt"},
	{"maxTokens", "max_tokens"},
	{"modelPreferences", "model_preferences"},
	{"stopSequences", "stop_sequences"},
	{"includeContext", "include_context"},
	{"toolChoice", "tool_choice"},
}

// samplingTable is the req a sampling handler gets: {messages = {{role,
// content}, …}, system_prompt, max_tokens, temperature, stop_sequences,
// model_preferences, include_context, metadata, tools, tool_choice}. A
// message's content is its one block ({type = "text", text = …}) or, when
// it has several, the list of them.
func samplingTable(L *lua.LState, p *mcp.CreateMessageWithToolsParams) lua.LValue {
	q := *p
	q.Meta = nil
	b, err := json.Marshal(&q)
	if err != nil {
		return L.NewTable()
	}
	t, ok := ToLua(L, json.RawMessage(b)).(*lua.LTable)
	if !ok {
		return L.NewTable()
	}
	for _, rn := range samplingRenames {
		if v := t.RawGetString(rn[0]); v != lua.LNil {
			t.RawSetString(rn[1], v)
			t.RawSetString(rn[0], lua.LNil)
		}
	}
	return t
}

// defaultModel is the model a sampling answer names when the handler does
// not say.
const defaultModel = "mcpvisor-lua"

// samplingResult reads a sampling handler's answer: a string (the text)
// or {role = "assistant", content = {type = "text", text = …} (or a list of
// blocks, or a string), model = …, stop_reason = …}.
func samplingResult(v lua.LValue) (*mcp.CreateMessageWithToolsResult, error) {
	wire := map[string]any{"role": "assistant", "model": defaultModel}
	switch x := v.(type) {
	case lua.LString:
		wire["content"] = map[string]any{"type": "text", "text": string(x)}
	case *lua.LTable:
		var bad error
		x.ForEach(func(k, v lua.LValue) {
			if bad != nil {
				return
			}
			key := lua.LVAsString(k)
			switch key {
			case "role", "model", "stop_reason":
				s, ok := v.(lua.LString)
				if !ok {
					bad = fmt.Errorf("%s must be a string, got %s", key, v.Type())
					return
				}
				wire[strings.Replace(key, "stop_reason", "stopReason", 1)] = string(s)
			case "content":
				if s, ok := v.(lua.LString); ok {
					wire["content"] = map[string]any{"type": "text", "text": string(s)}
					return
				}
				c, err := FromLua(v)
				if err != nil {
					bad = fmt.Errorf("content: %w", err)
					return
				}
				wire["content"] = c
			default:
				bad = fmt.Errorf("unknown field %s in its answer; an answer is {role, content, model, stop_reason} or a string", key)
			}
		})
		if bad != nil {
			return nil, bad
		}
		if wire["content"] == nil {
			return nil, errors.New("content is required: {type = \"text\", text = …}, a list of such blocks, or a string")
		}
	default:
		return nil, fmt.Errorf("it must return a string, {role, content, model, stop_reason}, nil to pass, or nil, err; got %s", v.Type())
	}
	if role := wire["role"]; role != "assistant" && role != "user" {
		return nil, fmt.Errorf("role must be \"assistant\" (or \"user\"), got %q", role)
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return nil, err
	}
	res := &mcp.CreateMessageWithToolsResult{}
	if err := json.Unmarshal(b, res); err != nil {
		return nil, fmt.Errorf("its answer cannot be sent: %v", err)
	}
	return res, nil
}
