package luaapi

import "github.com/mcpvisor/mcpvisor/events"

// HookError is published when Lua code the host runs for an event, a
// timer, a server's question, a toolset or a client's mode fails (kind
// hook_error); the manager never sees Lua failures.
type HookError struct {
	Hook      string // what failed: mcp_on("connected"), a handler, mcp_toolset("x")
	Error     string
	Traceback string
	// HookID and Failures, for a hook or timer: its id and how many
	// times in a row it failed; Disabled when it was turned off for it.
	HookID, Failures int
	Disabled         bool
	Tool             string // a toolset function's: the tool it was asked about
	// Client and Endpoint, when a gateway client was concerned.
	Client, Endpoint string
}

// Kind is hook_error.
func (HookError) Kind() events.Kind { return events.KindHookError }

// Fields renders hook and error, then what else is set: traceback,
// hook_id and failures, disabled, tool, client, endpoint.
func (p HookError) Fields() events.Fields {
	f := events.Fields{"hook": p.Hook, "error": p.Error}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	set("traceback", p.Traceback)
	if p.Failures > 0 {
		f["hook_id"], f["failures"] = p.HookID, p.Failures
	}
	if p.Disabled {
		f["disabled"] = true
	}
	set("tool", p.Tool)
	set("client", p.Client)
	set("endpoint", p.Endpoint)
	return f
}

// ConfigError is published when a config file could not be applied, or
// was applied only in part (kind config_error).
type ConfigError struct {
	File, Error string
	// Traceback holds the file:line of an error whose value is not a
	// string (error({...})); Note says what was applied all the same.
	Traceback, Note string
}

// Kind is config_error.
func (ConfigError) Kind() events.Kind { return events.KindConfigError }

// Fields renders file and error, then traceback and note when set.
func (p ConfigError) Fields() events.Fields {
	f := events.Fields{"file": p.File, "error": p.Error}
	if p.Traceback != "" {
		f["traceback"] = p.Traceback
	}
	if p.Note != "" {
		f["note"] = p.Note
	}
	return f
}

// ConfigApplied is published when a config file has been applied (kind
// config_applied): the servers it added, removed and replaced, and how
// many it left as they were.
type ConfigApplied struct {
	File                     string
	Added, Removed, Replaced []string
	Unchanged                int
}

// Kind is config_applied.
func (ConfigApplied) Kind() events.Kind { return events.KindConfigApplied }

// Fields renders file, added, removed, replaced (lists, never nil) and
// unchanged.
func (p ConfigApplied) Fields() events.Fields {
	return events.Fields{"file": p.File, "added": nonNil(p.Added), "removed": nonNil(p.Removed),
		"replaced": nonNil(p.Replaced), "unchanged": p.Unchanged}
}
