package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Declaration is one server found in an imported config file, as a raw
// declaration [DecodeSpec] understands (keys: command (list), url,
// transport, env, cwd, headers, enabled).
type Declaration struct {
	Name string
	Raw  map[string]any
	// Entry is where it came from, e.g. `mcpServers["git"]`, for error
	// messages.
	Entry string
}

// importKeys are the keys an imported server entry may have.
var importKeys = []string{"args", "command", "cwd", "disabled", "env", "headers", "transport", "type", "url"}

// foreignKeys are settings other clients keep in the same entries (Cline's
// tool approvals, VS Code's envFile and dev mode, …). They mean nothing to
// mcpvisor and are skipped, so a real config imports as it is.
var foreignKeys = []string{"alwaysAllow", "autoApprove", "description", "dev", "disabledTools", "envFile", "timeout", "name"}

// importTransports maps the transport names of the config flavours
// (lower-cased) to DecodeSpec's.
var importTransports = map[string]string{
	"stdio":           "stdio",
	"http":            "http",
	"streamable-http": "http",
	"streamable_http": "http",
	"streamablehttp":  "http",
	"sse":             "sse",
}

// ParseImport reads a Claude Desktop / Cursor / VS Code style JSON config,
// as mcp_import does: the servers are the top-level "mcpServers" object (Claude
// Desktop, Cursor), or "servers" (VS Code's .vscode/mcp.json), or
// "mcp": {"servers": …} (VS Code's settings.json). Other top-level keys are
// ignored. Comments and trailing commas are accepted, as VS Code writes
// them.
//
// Each entry becomes a [Declaration]: command and args make the command
// list; env, cwd, url and headers carry over; type or transport ("stdio",
// "http", "streamable-http", "streamableHttp", "sse") becomes transport;
// disabled: true becomes enabled = false. ${VAR} references are left for
// DecodeSpec to expand, and VS Code's ${env:VAR} is rewritten to ${VAR}.
//
// Every problem is reported at once, each naming file and entry, as an
// INVALID_CONFIG [*manager.Error] with Op "import":
//
//	import: mcp.json: mcpServers["git"]: unknown key "comand"; did you mean "command"?
//
// Invalid JSON is reported at file:line:column. The result is sorted by
// name.
func ParseImport(file string, data []byte) ([]Declaration, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, importError([]string{file + `: empty file; expected a JSON object with "mcpServers" or "servers"`})
	}
	var doc any
	if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(data, syn.Offset-1)
			return nil, importError([]string{fmt.Sprintf("%s:%d:%d: invalid JSON: %v", file, line, col, err)})
		}
		return nil, importError([]string{fmt.Sprintf("%s: invalid JSON: %v", file, err)})
	}
	p := importer{file: file, seen: map[string]string{}}
	servers, section := p.locate(doc)
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var decls []Declaration
	for _, name := range names {
		if d, ok := p.entry(section, name, servers[name]); ok {
			decls = append(decls, d)
		}
	}
	if len(p.probs) > 0 {
		return nil, importError(p.probs)
	}
	sort.Slice(decls, func(i, j int) bool { return manager.NameKey(decls[i].Name) < manager.NameKey(decls[j].Name) })
	return decls, nil
}

// importer collects the problems of one file.
type importer struct {
	file  string
	probs []string
	seen  map[string]string // nameKey → entry, for duplicates
}

func (p *importer) add(where, format string, args ...any) {
	p.probs = append(p.probs, p.file+": "+where+": "+fmt.Sprintf(format, args...))
}

// locate finds the object of servers and the path that reached it.
func (p *importer) locate(doc any) (map[string]any, string) {
	top, ok := doc.(map[string]any)
	if !ok {
		p.probs = append(p.probs, fmt.Sprintf("%s: must be a JSON object with \"mcpServers\" or \"servers\", got %s", p.file, jsonKind(doc)))
		return nil, ""
	}
	_, hasMCPServers := top["mcpServers"]
	_, hasServers := top["servers"]
	var section string
	var v any
	switch {
	case hasMCPServers && hasServers:
		p.probs = append(p.probs, p.file+`: has both "mcpServers" and "servers"; keep one`)
		return nil, ""
	case hasMCPServers:
		section, v = "mcpServers", top["mcpServers"]
	case hasServers:
		section, v = "servers", top["servers"]
	default:
		mcp, isObj := top["mcp"].(map[string]any)
		if s, found := mcp["servers"]; isObj && found {
			section, v = "mcp.servers", s
			break
		}
		msg := p.file + `: no "mcpServers" object (Claude Desktop, Cursor) or "servers" object (VS Code mcp.json, or "mcp": {"servers": …} in settings.json)`
		keys := slices.Sorted(maps.Keys(top))
		for _, k := range keys {
			if best := suggest.Closest(k, []string{"mcpServers", "servers"}); best != "" {
				msg += fmt.Sprintf("; found %q, did you mean %q?", k, best)
				break
			}
		}
		p.probs = append(p.probs, msg)
		return nil, ""
	}
	servers, ok := v.(map[string]any)
	if !ok {
		p.probs = append(p.probs, fmt.Sprintf("%s: %s: must be an object of servers by name, got %s", p.file, section, jsonKind(v)))
		return nil, ""
	}
	return servers, section
}

// entry converts one server entry; ok is false if it has problems.
func (p *importer) entry(section, name string, v any) (Declaration, bool) {
	where := fmt.Sprintf("%s[%q]", section, name)
	before := len(p.probs)
	n, err := manager.NormalizeName(name)
	if err != nil {
		p.add(where, "%v", err)
	} else if prev, dup := p.seen[manager.NameKey(n)]; dup {
		p.add(where, "same name as %s (server names are compared ignoring case, width and look-alike letters)", prev)
	} else {
		p.seen[manager.NameKey(n)] = where
	}
	e, ok := v.(map[string]any)
	if !ok {
		p.add(where, `must be an object like {"command": "npx", "args": ["-y", "pkg"]} or {"url": "https://…"}, got %s`, jsonKind(v))
		return Declaration{}, false
	}
	for _, k := range slices.Sorted(maps.Keys(e)) {
		if slices.Contains(importKeys, k) || slices.Contains(foreignKeys, k) {
			continue
		}
		if best := suggest.Closest(k, importKeys); best != "" {
			p.add(where, "unknown key %q; did you mean %q?", k, best)
		} else {
			p.add(where, "unknown key %q; known keys: %s", k, strings.Join(importKeys, ", "))
		}
	}

	raw := map[string]any{}
	if c, ok := e["command"]; ok {
		cmd, isStr := c.(string)
		if !isStr || cmd == "" {
			p.add(where, `command: must be the program as a non-empty string (its arguments go in "args"), got %s`, jsonKind(c))
		}
		command := []any{p.str(where, "command", cmd)}
		if a, ok := e["args"]; ok {
			list, isList := a.([]any)
			if !isList {
				p.add(where, "args: must be an array of strings, got %s", jsonKind(a))
			}
			for i, arg := range list {
				s, isStr := arg.(string)
				if !isStr {
					p.add(where, "args[%d]: must be a string, got %s", i, jsonKind(arg))
					continue
				}
				command = append(command, p.str(where, fmt.Sprintf("args[%d]", i), s))
			}
		}
		raw["command"] = command
	} else if _, ok := e["args"]; ok {
		p.add(where, `args: given without "command"`)
	}
	for _, k := range []string{"url", "cwd"} {
		if x, ok := e[k]; ok {
			s, isStr := x.(string)
			if !isStr {
				p.add(where, "%s: must be a string, got %s", k, jsonKind(x))
				continue
			}
			raw[k] = p.str(where, k, s)
		}
	}
	if t := p.transport(where, e); t != "" {
		raw["transport"] = t
	}
	for _, k := range []string{"env", "headers"} {
		if x, ok := e[k]; ok {
			if m := p.stringMap(where, k, x); m != nil {
				raw[k] = m
			}
		}
	}
	if x, ok := e["disabled"]; ok {
		b, isBool := x.(bool)
		switch {
		case !isBool:
			p.add(where, "disabled: must be true or false, got %s", jsonKind(x))
		case b:
			raw["enabled"] = false
		}
	}
	if len(p.probs) > before {
		return Declaration{}, false
	}
	return Declaration{Name: n, Raw: raw, Entry: where}, true
}

// transport reads "type" (VS Code) and "transport" as DecodeSpec's
// transport name, or "" when neither is given.
func (p *importer) transport(where string, e map[string]any) string {
	got, from := "", ""
	for _, k := range []string{"type", "transport"} {
		x, ok := e[k]
		if !ok {
			continue
		}
		s, isStr := x.(string)
		t, known := importTransports[strings.ToLower(s)]
		switch {
		case !isStr:
			p.add(where, "%s: must be a string, got %s", k, jsonKind(x))
		case !known:
			p.add(where, `%s: must be "stdio", "http", "streamable-http" or "sse", got %q`, k, s)
		case got != "" && t != got:
			p.add(where, "transport: %q contradicts type %q", s, from)
		default:
			got, from = t, s
		}
	}
	return got
}

// stringMap reads env or headers: an object of strings (numbers and
// booleans pass, as DecodeSpec accepts them).
func (p *importer) stringMap(where, field string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		p.add(where, `%s: must be an object of strings like {"KEY": "value"}, got %s`, field, jsonKind(v))
		return nil
	}
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch x := m[k].(type) {
		case string:
			out[k] = p.str(where, fmt.Sprintf("%s[%q]", field, k), x)
		case float64, bool:
			out[k] = x
		default:
			p.add(where, "%s[%q]: must be a string, got %s", field, k, jsonKind(x))
		}
	}
	return out
}

var (
	vscodeEnvRef   = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	vscodeInputRef = regexp.MustCompile(`\$\{input:([^}]*)\}`)
)

// str rewrites VS Code's ${env:VAR} to ${VAR} and refuses ${input:id},
// which only VS Code can prompt for.
func (p *importer) str(where, field, s string) string {
	for _, m := range vscodeInputRef.FindAllStringSubmatch(s, -1) {
		p.add(where, "%s: VS Code input variable ${input:%s} cannot be imported; use ${VAR} from the environment instead", field, m[1])
	}
	return vscodeEnvRef.ReplaceAllString(s, "$${$1}")
}

// importError builds the INVALID_CONFIG error listing every problem.
func importError(probs []string) *manager.Error {
	err := manager.ConfigError("", probs)
	err.Op = "import"
	return err
}

// jsonKind describes a decoded JSON value for error messages.
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case float64:
		return fmt.Sprintf("number %v", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// position is the 1-based line and column (in characters) of byte offset
// off in data.
func position(data []byte, off int64) (line, col int) {
	i := int(min(max(off, 0), int64(len(data))))
	before := data[:i]
	start := bytes.LastIndexByte(before, '\n') + 1
	return 1 + bytes.Count(before, []byte("\n")), 1 + utf8.RuneCount(before[start:])
}

// stripJSONC blanks out // and /* */ comments and trailing commas, which
// VS Code's JSON files allow, keeping every other byte at its offset so
// syntax errors still point at the right line and column. Strict JSON
// passes unchanged. An unterminated /* comment is left for the JSON
// decoder to report where it starts.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	blank := func(from, to int) {
		for j := from; j < to; j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	inString := false
	comma := -1 // a comma followed so far only by blanks
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, comma = true, -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			comma = -1
		}
	}
	return out
}
