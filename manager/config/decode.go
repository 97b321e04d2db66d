package config

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// DecodeOptions configures [DecodeSpec].
type DecodeOptions struct {
	// LookupEnv resolves ${VAR} references. If nil, os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// specFields are the accepted keys of a declaration, for unknown-field
// errors and did-you-mean suggestions.
var specFields = map[string][]string{
	"":         {"command", "url", "transport", "env", "cwd", "headers", "enabled", "timeouts", "backoff", "breaker", "max_retries", "max_frame_bytes", "expose", "session", "max_sessions", "questions", "roots", "auth", "protocol"},
	"expose":   {"prefix", "hide", "rename", "pin", "describe", "tags", "aliases"},
	"auth":     {"client_id", "client_secret", "scopes", "redirect_port", "client_metadata_url"},
	"timeouts": {"connect", "request", "health_interval", "health_timeout", "keepalive", "server", "idle"},
	"breaker":  {"failures", "window", "open_for"},
	"backoff":  {"initial", "max", "multiplier", "jitter"},
}

// DecodeSpec turns a declaration as written in Lua or JSON (a map of plain
// values: string, bool, float64/int, []any, map[string]any) into a validated
// manager.Spec with defaults applied. It reports every problem at once, each naming
// the field, as an INVALID_CONFIG [*Error] for server name.
func DecodeSpec(name string, raw map[string]any, opts DecodeOptions) (manager.Spec, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	d := decoder{lookup: lookup}
	s := d.spec(raw).WithDefaults()
	s.Secrets = d.secrets
	// The spec's own validation (ranges, consistency) runs even when
	// decoding found problems, so one edit can fix everything. A field whose
	// form was wrong is reported once: its range check would only complain
	// about the zero value decoding left in its place.
	for _, p := range s.Problems() {
		field, _, _ := strings.Cut(p, ":")
		if !d.probs.mentions(field) {
			d.probs = append(d.probs, p)
		}
	}
	if len(d.probs) > 0 {
		return manager.Spec{}, manager.ConfigError(name, d.probs)
	}
	return s, nil
}

type decoder struct {
	lookup  func(string) (string, bool)
	probs   problems
	secrets map[string]string // the ${VAR} expanded, by name
}

// problems collects what is wrong with a declaration as "field: message".
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

// mentions reports whether a problem about field (or a part of it) is
// already listed.
func (p problems) mentions(field string) bool {
	for _, e := range p {
		f, _, _ := strings.Cut(e, ":")
		if f == field || strings.HasPrefix(f, field+".") || strings.HasPrefix(f, field+"[") {
			return true
		}
	}
	return false
}

func (d *decoder) spec(raw map[string]any) manager.Spec {
	var s manager.Spec
	d.unknown("", raw)
	if v, ok := raw["command"]; ok {
		if line, isStr := v.(string); isStr && strings.TrimSpace(line) != "" {
			// `command = "npx -y pkg"`, as other clients write it.
			fields := strings.Fields(line)
			args := make([]any, 0, len(fields)-1)
			for _, f := range fields[1:] {
				args = append(args, f)
			}
			if extra, ok := raw["args"].([]any); ok {
				args = append(args, extra...)
			}
			d.probs.add("command", "must be a list of the program and its arguments, got string %q; write command = %s", line, commandList(fields[0], args))
			s.Command = []string{}
		} else {
			s.Command = d.strings("command", v)
		}
		if list, ok := v.([]any); ok {
			s.Written = asWritten(list)
		}
	}
	if v, ok := raw["url"]; ok {
		s.URL = d.str("url", v)
		if u, ok := v.(string); ok && envRef.MatchString(u) {
			s.Written = u
		}
	}
	transport := ""
	if v, ok := raw["transport"]; ok {
		transport = strings.ToLower(d.str("transport", v))
	}
	switch {
	case s.Command != nil && s.URL != "":
		d.probs.add("command", "both command and url are set; a server is either a process (command) or a URL")
	case s.Command != nil:
		s.Transport = manager.TransportStdio
		if transport != "" && transport != "stdio" {
			d.probs.add("transport", "%q needs url, not command", transport)
		}
	case s.URL != "":
		switch transport {
		case "", "http", "streamable_http", "streamable-http", "streamablehttp":
			s.Transport = manager.TransportHTTP
		case "sse":
			s.Transport = manager.TransportSSE
		default:
			d.probs.add("transport", "must be \"http\" (streamable HTTP, the default for url) or \"sse\", got %q", transport)
			s.Transport = manager.Transport(transport)
		}
	default:
		d.probs.add("command", "missing transport: set command = {\"prog\", \"arg\"} for a process or url = \"http://…\" for a remote server")
	}
	if v, ok := raw["env"]; ok {
		s.Env = d.stringMap("env", v)
	}
	if v, ok := raw["cwd"]; ok {
		s.Cwd = d.str("cwd", v)
	}
	if v, ok := raw["headers"]; ok {
		s.Headers = d.stringMap("headers", v)
	}
	if v, ok := raw["enabled"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			d.probs.add("enabled", "must be true or false, got %s", describe(v))
		}
		s.Disabled = !b
	}
	if t, ok := d.table("timeouts", raw["timeouts"]); ok {
		s.Timeouts.Connect = d.duration("timeouts.connect", t["connect"])
		s.Timeouts.Request = d.duration("timeouts.request", t["request"])
		s.Timeouts.HealthInterval = d.duration("timeouts.health_interval", t["health_interval"])
		s.Timeouts.HealthTimeout = d.duration("timeouts.health_timeout", t["health_timeout"])
		s.Timeouts.Keepalive = d.duration("timeouts.keepalive", t["keepalive"])
		s.Timeouts.Server = d.duration("timeouts.server", t["server"])
		switch v := t["idle"]; v {
		case 0, 0.0, int64(0), "0", "0s":
			s.Timeouts.Idle = manager.Never // idle = 0 disables idle close
		default:
			s.Timeouts.Idle = d.duration("timeouts.idle", v)
		}
	}
	switch v := raw["breaker"].(type) {
	case nil:
	case bool:
		if v {
			d.probs.add("breaker", "must be false (to turn it off) or a table like {failures = 5, window = \"2m\", open_for = \"30s\"}, got true")
		}
		s.Breaker.Disabled = !v
	default:
		if b, ok := d.table("breaker", v); ok {
			if f, ok := b["failures"]; ok {
				s.Breaker.Failures = d.whole("breaker.failures", f)
				d.notZero("breaker.failures", f, manager.DefaultBreakerFailures)
			}
			s.Breaker.Window = d.duration("breaker.window", b["window"])
			s.Breaker.OpenFor = d.duration("breaker.open_for", b["open_for"])
		}
	}
	if b, ok := d.table("backoff", raw["backoff"]); ok {
		s.Backoff.Initial = d.duration("backoff.initial", b["initial"])
		s.Backoff.Max = d.duration("backoff.max", b["max"])
		if v, ok := b["multiplier"]; ok {
			s.Backoff.Multiplier = d.number("backoff.multiplier", v, 0)
			d.notZero("backoff.multiplier", v, manager.DefaultMultiplier)
		}
		if v, ok := b["jitter"]; ok {
			s.Backoff.Jitter = d.number("backoff.jitter", v, 0)
			if s.Backoff.Jitter == 0 {
				s.Backoff.Jitter = manager.NoJitter
			}
		}
	}
	if v, ok := raw["max_retries"]; ok {
		s.MaxRetries = new(d.whole("max_retries", v))
	}
	if e, ok := d.table("expose", raw["expose"]); ok {
		if v, ok := e["prefix"]; ok {
			s.Expose.Prefix = d.str("expose.prefix", v)
		}
		if v, ok := e["hide"]; ok {
			s.Expose.Hide = d.strings("expose.hide", v)
		}
		if v, ok := e["rename"]; ok {
			s.Expose.Rename = d.stringMap("expose.rename", v)
		}
		if v, ok := e["pin"]; ok {
			s.Expose.Pin = d.strings("expose.pin", v)
		}
		if v, ok := e["describe"]; ok {
			s.Expose.Describe = d.stringMap("expose.describe", v)
		}
		if v, ok := e["tags"]; ok {
			s.Expose.Tags = d.wordsMap("expose.tags", v)
		}
		if v, ok := e["aliases"]; ok {
			s.Expose.Aliases = d.wordsMap("expose.aliases", v)
		}
	}
	if a, ok := d.table("auth", raw["auth"]); ok {
		if v, ok := a["client_id"]; ok {
			s.Auth.ClientID = d.str("auth.client_id", v)
		}
		if v, ok := a["client_secret"]; ok {
			s.Auth.ClientSecret = d.str("auth.client_secret", v)
		}
		if v, ok := a["scopes"]; ok {
			s.Auth.Scopes = d.strings("auth.scopes", v)
		}
		if v, ok := a["redirect_port"]; ok {
			s.Auth.RedirectPort = d.whole("auth.redirect_port", v)
			if s.Auth.RedirectPort == 0 {
				d.probs.add("auth.redirect_port", "must be a port number (1-65535); leave it out for any free port")
			}
		}
		if v, ok := a["client_metadata_url"]; ok {
			s.Auth.ClientMetadataURL = d.str("auth.client_metadata_url", v)
		}
	}
	if v, ok := raw["max_frame_bytes"]; ok {
		s.MaxFrameBytes = d.whole("max_frame_bytes", v)
		d.notZero("max_frame_bytes", v, manager.DefaultMaxFrameBytes)
	}
	if v, ok := raw["session"]; ok {
		if mode := d.str("session", v); mode != "shared" {
			s.Session = manager.SessionMode(mode) // validated with the spec
		}
	}
	if v, ok := raw["questions"]; ok {
		if mode := d.str("questions", v); mode != "own" {
			s.Questions = manager.QuestionsMode(mode) // validated with the spec
		}
	}
	if v, ok := raw["max_sessions"]; ok {
		s.MaxSessions = d.whole("max_sessions", v)
		d.notZero("max_sessions", v, manager.DefaultMaxSessions)
	}
	if v, ok := raw["roots"]; ok {
		s.Roots = d.strings("roots", v)
	}
	if v, ok := raw["protocol"]; ok {
		if p := d.str("protocol", v); p != "auto" {
			s.Protocol = manager.Protocol(p) // validated with the spec
		}
	}
	return s
}

// unknown reports keys of raw that the section does not define.
func (d *decoder) unknown(section string, raw map[string]any) {
	known := specFields[section]
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		field := k
		if section != "" {
			field = section + "." + k
		}
		if hint := foreignField(section, k, raw); hint != "" {
			d.probs.add(field, "unknown field; %s", hint)
		} else if best := suggest.Closest(k, known); best != "" {
			d.probs.add(field, "unknown field; did you mean %q?", best)
		} else if near := suggest.CloseMatches(k, known); len(near) == 1 {
			d.probs.add(field, "unknown field; did you mean %q?", near[0]) // retries → max_retries
		} else {
			d.probs.add(field, "unknown field; known fields: %s", strings.Join(known, ", "))
		}
	}
}

// foreignField explains a key that other MCP clients' configs use for
// what a declaration says another way, or "".
func foreignField(section, k string, raw map[string]any) string {
	if section != "" {
		return ""
	}
	switch k {
	case "args":
		if line, ok := raw["command"].(string); ok && strings.TrimSpace(line) != "" {
			return "put the arguments in command (see command)" // whose problem shows the list
		}
		prog := "prog"
		if list, ok := raw["command"].([]any); ok && len(list) == 1 {
			prog, _ = list[0].(string)
		}
		args, _ := raw["args"].([]any)
		return "put the arguments in command, after the program: command = " + commandList(prog, args)
	case "type":
		return `the transport is set by command or url, or by transport = "sse"`
	}
	return ""
}

// commandList writes a command line as the Lua list a declaration takes,
// e.g. {"npx", "-y", "pkg"}; arguments that are not strings show as "…".
func commandList(prog string, args []any) string {
	parts := []string{fmt.Sprintf("%q", prog)}
	for _, a := range args {
		if s, ok := a.(string); ok {
			parts = append(parts, fmt.Sprintf("%q", s))
		} else {
			parts = append(parts, `"…"`)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (d *decoder) table(field string, v any) (map[string]any, bool) {
	if v == nil {
		return nil, false
	}
	t, ok := v.(map[string]any)
	if !ok {
		d.probs.add(field, "must be a table of settings, got %s", describe(v))
		return nil, false
	}
	d.unknown(field, t)
	return t, true
}

func (d *decoder) str(field string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.probs.add(field, "must be a string, got %s", describe(v))
		return ""
	}
	return d.expand(field, s)
}

func (d *decoder) strings(field string, v any) []string {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		d.probs.add(field, "must be a non-empty list of strings like {\"prog\", \"arg\"}, got %s", describe(v))
		return []string{}
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = d.str(fmt.Sprintf("%s[%d]", field, i+1), e)
	}
	return out
}

func (d *decoder) stringMap(field string, v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		if l, isList := v.([]any); isList && len(l) == 0 {
			return map[string]string{}
		}
		d.probs.add(field, "must be a table of string values like {KEY = \"value\"}, got %s", describe(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch x := e.(type) {
		case string:
			out[k] = d.expand(field+"."+k, x)
		case float64, int, int64, bool:
			out[k] = fmt.Sprint(x)
		default:
			d.probs.add(field+"."+k, "must be a string, got %s", describe(e))
		}
	}
	return out
}

// wordsMap reads a table of tool names to lists of words, such as
// {search_issues = {"bugs", "tickets"}}; a lone string is a list of one.
func (d *decoder) wordsMap(field string, v any) map[string][]string {
	m, ok := v.(map[string]any)
	if !ok {
		if l, isList := v.([]any); isList && len(l) == 0 {
			return map[string][]string{}
		}
		d.probs.add(field, "must be a table of tool names to lists of words like {search_issues = {\"bugs\", \"tickets\"}}, got %s", describe(v))
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, e := range m {
		if s, isStr := e.(string); isStr {
			out[k] = []string{d.expand(field+"."+k, s)}
			continue
		}
		out[k] = d.strings(field+"."+k, e)
	}
	return out
}

// number returns v as a float, or def when v is absent.
func (d *decoder) number(field string, v any, def float64) float64 {
	switch x := v.(type) {
	case nil:
		return def
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	d.probs.add(field, "must be a number, got %s", describe(v))
	return def
}

// whole returns v as an integer; a fraction, or a number beyond any
// field's range, is a problem. Ranges are the spec's to check.
func (d *decoder) whole(field string, v any) int {
	n := d.number(field, v, 0)
	if n != math.Trunc(n) || math.Abs(n) > 1<<40 {
		d.probs.add(field, "must be a whole number, got %s", describe(v))
		return 0
	}
	return int(n)
}

// notZero reports an explicit 0 in a field whose zero value means "the
// default": kept, it would silently become def.
func (d *decoder) notZero(field string, v any, def float64) {
	switch v {
	case 0, 0.0, int64(0):
		d.probs.add(field, "0 is not a setting; leave it out for the default (%g)", def)
	}
}

// duration accepts "250ms"-style strings and numbers of seconds. Absent is 0
// (the default).
func (d *decoder) duration(field string, v any) time.Duration {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		dur, err := time.ParseDuration(x)
		if err != nil {
			if durationSyntax.MatchString(x) {
				d.probs.add(field, "%q is out of range", x)
			} else if _, numErr := strconv.ParseFloat(x, 64); numErr == nil {
				d.probs.add(field, "%q has no unit; write e.g. \"%ss\" or \"%sms\", or a number of seconds", x, x, x)
			} else {
				d.probs.add(field, "%q is not a duration like \"250ms\", \"30s\" or \"1m\"", x)
			}
			return 0
		}
		if dur <= 0 {
			d.probs.add(field, "must be > 0, got %q", x)
			return 0
		}
		return dur
	case float64, int, int64:
		secs := d.number(field, x, 0)
		if secs <= 0 {
			d.probs.add(field, "must be > 0, got %g", secs)
			return 0
		}
		if secs > 1e6 {
			d.probs.add(field, "%g seconds is out of range", secs)
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	d.probs.add(field, "must be a duration string like \"30s\" or a number of seconds, got %s", describe(v))
	return 0
}

// durationSyntax matches what time.ParseDuration accepts in form; such a
// string that fails to parse overflowed.
var durationSyntax = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${VAR} with the host environment's value; a missing
// variable is a problem naming it.
func (d *decoder) expand(field, s string) string {
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := d.lookup(name)
		if !ok {
			d.probs.add(field, "environment variable %s is not set (referenced as ${%s}); set it where mcpvisor starts (export %s=…), or write the value", name, name, name)
		}
		if ok {
			if d.secrets == nil {
				d.secrets = map[string]string{}
			}
			d.secrets[name] = v
		}
		return v
	})
}

// asWritten is a command line with its ${VAR} references unexpanded,
// for display; "" when it has none (the command shows as it is).
func asWritten(list []any) string {
	parts := make([]string, len(list))
	refs := false
	for i, e := range list {
		parts[i], _ = e.(string)
		refs = refs || envRef.MatchString(parts[i])
	}
	if !refs {
		return ""
	}
	return strings.Join(parts, " ")
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case float64, int, int64:
		return fmt.Sprintf("number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}
