package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/manager/oauth"

	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/internal/redact"
	"github.com/mcpvisor/mcpvisor/manager/internal/retry"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/expose"
)

// Transport is how the host talks to a server.
type Transport string

// The transports.
const (
	TransportStdio Transport = "stdio" // spawn Command, newline JSON over stdin/stdout
	TransportHTTP  Transport = "http"  // streamable HTTP at URL
	TransportSSE   Transport = "sse"   // legacy HTTP+SSE at URL
	// TransportInProcess is a server living in the host itself, reached
	// through Spec.Dial (the Lua runtime serves its mcp_tool tools so).
	TransportInProcess Transport = "inprocess"
)

// SessionMode says how callers share a server's sessions.
type SessionMode string

// The session modes.
const (
	SessionShared    SessionMode = ""           // one session for every caller
	SessionPerClient SessionMode = "per_client" // one session per client
)

// QuestionsMode says to whom a shared server's requests (elicitation,
// sampling, roots) may go when nothing ties them to one client's call.
type QuestionsMode string

// The questions modes.
const (
	// QuestionsOwn, the default, asks a client only what provably belongs
	// to it: a request carried by its call (on the call's HTTP response
	// stream, or as the call's input requests), on its own session
	// (SessionPerClient), or while it is the only client the host serves.
	QuestionsOwn QuestionsMode = ""
	// QuestionsCaller trusts the server to ask only about calls in flight:
	// a request is also asked of the client whose calls are the only
	// ones in flight on the server's session. A server that asks later,
	// after the call that led to it ended, would then show one client's
	// question to another, and credit that client's answer to the first.
	QuestionsCaller QuestionsMode = "caller"
)

// Dialer opens the transport of one connection to an in-process server.
// ctx lives as long as the connection. Specs compare their Dialers by
// identity: the same value means the same server.
type Dialer interface {
	Dial(ctx context.Context) (mcp.Transport, error)
}

// Spec is one server's declaration, decoded and validated. Build it from
// Lua or JSON shapes with config.DecodeSpec (package manager/config); a
// Spec built by hand is validated by [Manager.Add].
type Spec struct {
	Transport Transport
	Command   []string          // stdio: program and arguments
	URL       string            // http, sse
	Env       map[string]string // stdio: added to the host's environment
	Cwd       string            // stdio: working directory
	Headers   map[string]string // http, sse: sent with every request
	Dial      Dialer            // inprocess: connects to the server
	// Disabled servers (enabled = false) are listed but never connected.
	Disabled bool

	Timeouts Timeouts
	Backoff  Backoff
	Breaker  Breaker
	// MaxRetries bounds reconnection: at most *MaxRetries+1 consecutive
	// failed attempts, then the server is failed. If nil, it retries
	// forever; new(0) gives up after the first failure.
	MaxRetries *int
	// MaxFrameBytes caps one inbound JSON-RPC message (stdio line or SSE
	// event). If zero, 16 MiB.
	MaxFrameBytes int
	// Expose is how the gateway offers the server's tools to MCP clients;
	// the manager validates it with the rest and otherwise ignores it.
	Expose expose.Rules
	// Session is how callers share the server: SessionShared (the
	// default, "") gives every caller the one session; SessionPerClient
	// gives each client (see CallOptions.Client) an upstream session of
	// its own, at most MaxSessions of them.
	Session SessionMode
	// MaxSessions caps the clients' sessions of a per-client server. If
	// zero, 5.
	MaxSessions int
	// Questions says to whom the server's requests may go when nothing
	// ties them to one client's call; see QuestionsMode.
	Questions QuestionsMode
	// Roots are the roots (file:// URIs) the server is told it may work
	// in, before the host's own (Manager.SetAnswerer).
	Roots []string
	// Protocol is the protocol generation spoken with the server;
	// ProtocolAuto (the default) chooses per transport (see Protocol).
	Protocol Protocol
	// Auth is how an http or sse server's client logs in when the server
	// asks for OAuth (see package manager/oauth); the zero value discovers
	// everything and registers dynamically. A server given an
	// Authorization header never logs in.
	Auth oauth.Config
	// Written is the command line or URL as declared, with its ${VAR}
	// references unexpanded, when it had any: what Endpoint shows, so
	// that a value from the environment (a token) is never displayed.
	Written string
	// Secrets are the values taken from the environment, by variable
	// name (${TOKEN} → its value). Wherever text from the server is shown
	// or sent (its stderr, its error messages, status, events, logs, the
	// errors callers get) each value is replaced by its ${NAME}, in
	// whatever encoding the server printed it (see package
	// internal/redact). A value under 6 bytes is not hidden.
	Secrets map[string]string
}

// Timeouts are a server's time limits. Zero fields take defaults.
type Timeouts struct {
	// Connect bounds one attempt: spawn or dial, handshake and first
	// discovery. If zero, 60s.
	Connect time.Duration
	// Request is the default limit of one request. If zero, 30s.
	Request time.Duration
	// HealthInterval is how often a connected session is pinged. If zero, 10s.
	HealthInterval time.Duration
	// HealthTimeout bounds one ping; no pong in time closes the session.
	// If zero, 5s. It must be below HealthInterval.
	HealthTimeout time.Duration
	// Keepalive is the longest an HTTP or SSE session goes without a
	// request, so proxies keep its connections open: pings come at least
	// this often. If zero, 15s. Stdio ignores it.
	Keepalive time.Duration
	// Server is how long the server may send nothing at all before the
	// connection is considered lost. If zero, 10m.
	Server time.Duration
	// Idle closes a session after this long with no calls and none in
	// flight; the next call reconnects it. If zero, 10m; Never disables.
	Idle time.Duration
}

// Never, as a Timeouts field that allows it (Idle), disables that timeout.
const Never time.Duration = -1

// Breaker is the circuit breaker. Zero fields take defaults.
type Breaker struct {
	// Disabled turns the breaker off (breaker = false): failures follow
	// the backoff schedule forever.
	Disabled bool
	// Failures is how many consecutive failed attempts within Window open
	// the circuit. If zero, 5.
	Failures int
	Window   time.Duration // if zero, 2m
	// OpenFor is how long the circuit stays open before one probe attempt.
	// If zero, 30s.
	OpenFor time.Duration
}

// Backoff is the reconnection schedule. Zero fields take defaults.
type Backoff struct {
	Initial    time.Duration // if zero, 100ms
	Max        time.Duration // if zero, 3s
	Multiplier float64       // if zero, 2
	Jitter     float64       // fraction of the delay added at random; if zero, 0.25. Use NoJitter for none.
}

// NoJitter, as Backoff.Jitter, disables jitter (a zero Jitter means the default).
const NoJitter = -1.0

// The defaults of zero fields.
const (
	DefaultConnectTimeout = 60 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 3 * time.Second
	DefaultMultiplier     = 2.0
	DefaultJitter         = 0.25
	DefaultMaxFrameBytes  = 16 << 20
	DefaultMaxSessions    = 5

	DefaultHealthInterval = 10 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
	DefaultKeepalive      = 15 * time.Second
	DefaultServerSilence  = 10 * time.Minute
	DefaultIdle           = 10 * time.Minute

	DefaultBreakerFailures = 5
	DefaultBreakerWindow   = 2 * time.Minute
	DefaultBreakerOpenFor  = 30 * time.Second
)

// retryPolicy is the retry policy of s (defaults applied), its jitter
// drawn from rand.
func (s Spec) retryPolicy(rand func() float64) *retry.Policy {
	limit := -1 // no limit
	if s.MaxRetries != nil {
		limit = *s.MaxRetries
	}
	return retry.New(retry.Config{
		Backoff:    s.Backoff.schedule(),
		Breaker:    retry.BreakerConfig(s.Breaker),
		MaxRetries: limit,
		Rand:       rand,
	})
}

// Delay returns how long to wait after the n-th consecutive failure (n ≥ 1):
//
//	min(Initial · Multiplier^(n−1), Max) + jitter · that · r
//
// where r is uniform in [0, 1) and supplied by the caller, so the schedule is
// pure and testable. b must have its defaults applied.
func (b Backoff) Delay(n int, r float64) time.Duration {
	return b.schedule().Delay(n, r)
}

func (b Backoff) schedule() retry.Schedule {
	s := retry.Schedule{Initial: b.Initial, Max: b.Max, Multiplier: b.Multiplier, Jitter: b.Jitter}
	if b.Jitter == NoJitter {
		s.Jitter = 0
	}
	return s
}

// WithDefaults returns s with every zero field set to its default.
func (s Spec) WithDefaults() Spec {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&s.Timeouts.Connect, DefaultConnectTimeout)
	def(&s.Timeouts.Request, DefaultRequestTimeout)
	def(&s.Timeouts.HealthInterval, DefaultHealthInterval)
	def(&s.Timeouts.HealthTimeout, DefaultHealthTimeout)
	def(&s.Timeouts.Keepalive, DefaultKeepalive)
	def(&s.Timeouts.Server, DefaultServerSilence)
	def(&s.Timeouts.Idle, DefaultIdle)
	if s.Breaker.Failures == 0 {
		s.Breaker.Failures = DefaultBreakerFailures
	}
	def(&s.Breaker.Window, DefaultBreakerWindow)
	def(&s.Breaker.OpenFor, DefaultBreakerOpenFor)
	def(&s.Backoff.Initial, DefaultBackoffInitial)
	def(&s.Backoff.Max, DefaultBackoffMax)
	if s.Backoff.Multiplier == 0 {
		s.Backoff.Multiplier = DefaultMultiplier
	}
	if s.Backoff.Jitter == 0 {
		s.Backoff.Jitter = DefaultJitter
	}
	if s.MaxFrameBytes == 0 {
		s.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if s.MaxSessions == 0 && s.Session == SessionPerClient {
		s.MaxSessions = DefaultMaxSessions
	}
	return s
}

// Problems lists what is wrong with a spec whose defaults are applied, each
// as "field: message", or nothing when it is valid. It owns the ranges of
// every field.
func (s Spec) Problems() []string {
	var p problems
	switch s.Transport {
	case TransportStdio:
		if len(s.Command) == 0 || s.Command[0] == "" {
			p.add("command", "must name a program, e.g. command = {\"npx\", \"-y\", \"pkg\"}")
		}
	case TransportHTTP, TransportSSE:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			shown := redactURL(s.URL)
			if !strings.Contains(s.URL, "://") {
				p.add("url", "must be an http:// or https:// URL, got %q; add the scheme: %q", shown, "http://"+shown)
			} else {
				p.add("url", "must be an http:// or https:// URL, got %q", shown)
			}
		}
	case TransportInProcess:
		if s.Dial == nil {
			p.add("dial", "an in-process server needs a Dialer")
		}
	case "":
		p.add("command", "missing transport: set command = {\"prog\", \"arg\"} for a process or url = \"http://…\" for a remote server")
	default:
		p.add("transport", "must be stdio, http or sse, got %q", s.Transport)
	}
	for _, e := range s.Expose.Problems() {
		p.add(e.Field, "%s", e.Msg)
	}
	if !reflect.DeepEqual(s.Auth, oauth.Config{}) && s.Transport != TransportHTTP && s.Transport != TransportSSE {
		p.add("auth", "only an http or sse server logs in, this one is %s", s.Transport)
	}
	p = append(p, s.Auth.Problems()...)
	if s.Dial != nil && s.Transport != TransportInProcess {
		p.add("dial", "only an in-process server has a Dialer, this one is %s", s.Transport)
	}
	p.duration("timeouts.connect", s.Timeouts.Connect, time.Hour)
	p.duration("timeouts.request", s.Timeouts.Request, 24*time.Hour)
	p.duration("timeouts.health_interval", s.Timeouts.HealthInterval, 24*time.Hour)
	p.duration("timeouts.health_timeout", s.Timeouts.HealthTimeout, time.Hour)
	if s.Timeouts.HealthTimeout >= s.Timeouts.HealthInterval && s.Timeouts.HealthTimeout > 0 {
		p.add("timeouts.health_timeout", "must be below timeouts.health_interval (%s), got %s", s.Timeouts.HealthInterval, s.Timeouts.HealthTimeout)
	}
	p.duration("timeouts.keepalive", s.Timeouts.Keepalive, 24*time.Hour)
	p.duration("timeouts.server", s.Timeouts.Server, 7*24*time.Hour)
	if s.Timeouts.Idle != Never {
		p.duration("timeouts.idle", s.Timeouts.Idle, 7*24*time.Hour)
	}
	if !s.Breaker.Disabled {
		if s.Breaker.Failures < 1 || s.Breaker.Failures > 1000 {
			p.add("breaker.failures", "must be within 1..1000, got %d", s.Breaker.Failures)
		}
		p.duration("breaker.window", s.Breaker.Window, 24*time.Hour)
		p.duration("breaker.open_for", s.Breaker.OpenFor, 24*time.Hour)
	}
	p.duration("backoff.initial", s.Backoff.Initial, time.Hour)
	p.duration("backoff.max", s.Backoff.Max, 24*time.Hour)
	if s.Backoff.Max < s.Backoff.Initial {
		p.add("backoff.max", "must be at least backoff.initial (%s), got %s", s.Backoff.Initial, s.Backoff.Max)
	}
	if s.Backoff.Multiplier < 1 || s.Backoff.Multiplier > 100 {
		p.add("backoff.multiplier", "must be within 1..100, got %g", s.Backoff.Multiplier)
	}
	if j := s.Backoff.Jitter; (j < 0 && j != NoJitter) || j > 1 {
		p.add("backoff.jitter", "must be within 0..1, got %g", s.Backoff.Jitter)
	}
	if n := s.MaxRetries; n != nil && (*n < 0 || *n > 1e6) {
		p.add("max_retries", "must be within 0..1000000 (leave it out to retry forever), got %d", *n)
	}
	if s.MaxFrameBytes < 1024 || s.MaxFrameBytes > 1<<30 {
		p.add("max_frame_bytes", "must be within 1024..1073741824, got %d", s.MaxFrameBytes)
	}
	switch s.Session {
	case SessionShared:
		if s.MaxSessions != 0 {
			p.add("max_sessions", "applies only to session = \"per_client\" (this server is shared by every caller)")
		}
	case SessionPerClient:
		if s.MaxSessions < 1 || s.MaxSessions > 1000 {
			p.add("max_sessions", "must be within 1..1000, got %d", s.MaxSessions)
		}
	default:
		p.add("session", "must be \"shared\" or \"per_client\", got %q", s.Session)
	}
	switch s.Questions {
	case QuestionsOwn, QuestionsCaller:
	default:
		p.add("questions", "must be \"own\" (the default: a client is asked only what its own call carries) or \"caller\" (also what comes while only its calls are in flight), got %q", s.Questions)
	}
	switch s.Protocol {
	case ProtocolAuto, Protocol20251125, Protocol20260728:
	default:
		p.add("protocol", "must be \"auto\" (the default: the generation that lets every feature of the server reach every client), \"2025-11-25\" or \"2026-07-28\", got %q", s.Protocol)
	}
	for i, r := range s.Roots {
		if err := CheckRoot(r); err != nil {
			p.add(fmt.Sprintf("roots[%d]", i+1), "%v", err)
		}
	}
	return p
}

// Equal reports whether two specs declare the same server. Dialers
// compare by identity.
func (s Spec) Equal(o Spec) bool {
	if s.Dial != o.Dial {
		return false
	}
	s.Dial, o.Dial = nil, nil
	return reflect.DeepEqual(s.WithDefaults(), o.WithDefaults())
}

// Endpoint describes where the server is, for status and logs: the command
// line for stdio, the URL without credentials or query for HTTP, each as
// written when it referred to the environment (${TOKEN}, never its value).
func (s Spec) Endpoint() string {
	switch s.Transport {
	case TransportStdio:
		if s.Written != "" {
			return s.Written
		}
		return strings.Join(s.Command, " ")
	case TransportInProcess:
		return "in-process"
	}
	if s.Written != "" {
		return redactURL(s.Written)
	}
	return redactURL(s.URL)
}

// redactURL drops userinfo, query and fragment, which may carry secrets.
// A value that is not a URL with a host loses the same parts, found by
// their delimiters, so that it can still be shown.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" { // "user:pw@host/mcp" parses, as an opaque URL
		raw, _, _ = strings.Cut(raw, "#")
		raw, _, _ = strings.Cut(raw, "?")
		scheme, rest, found := strings.Cut(raw, "://")
		if !found {
			scheme, rest = "", raw
		}
		authority, path, _ := strings.Cut(rest, "/")
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			authority = authority[at+1:]
		}
		out := authority
		if path != "" || strings.Contains(rest, "/") {
			out += "/" + path
		}
		if found {
			out = scheme + "://" + out
		}
		return out
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// problems collects validation failures as "field: message".
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) duration(field string, d, max time.Duration) {
	switch {
	case d <= 0:
		p.add(field, "must be > 0, got %s", d)
	case d > max:
		p.add(field, "must be at most %s, got %s", max, d)
	}
}

// ConfigError builds the INVALID_CONFIG error of server listing every
// problem (as Problems gives them).
func ConfigError(server string, probs []string) *Error {
	if len(probs) == 1 {
		return newError(CodeInvalidConfig, server, "config", errors.New(probs[0]))
	}
	return errorf(CodeInvalidConfig, server, "config", "%d problems: %s", len(probs), strings.Join(probs, "; "))
}

// Startable reports whether a stdio server's process could be started as
// declared, looking at this host as it is now: the program found on PATH
// (or at its path), the working directory present. The error, an
// [*Error] of code INVALID_CONFIG naming the server, says what is wrong
// and how to fix it; errors.Is(err, ErrCannotStart) holds. Other
// transports are always startable: a URL is only known by dialling it.
//
// A server that fails to start for such a reason is not retried: it goes
// to StateFailed with the same message.
func (s Spec) Startable(server string) error {
	if s.Transport != TransportStdio {
		return nil
	}
	if err := proc.Startable(s.Command, s.Cwd); err != nil {
		if secrets := redact.New(s.Secrets); secrets != nil {
			// It quotes the command line: ${NAME}, not the values.
			err = hiddenError{err: err, secrets: secrets}
		}
		return newError(CodeInvalidConfig, server, "spawn", err)
	}
	return nil
}

// CheckRoot reports why uri cannot be a root, or nil: a root is a
// file:// URI of an absolute path on this machine ("file:///home/me/project"),
// without query or fragment.
func CheckRoot(uri string) error {
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("%q is not a URI: %v", uri, err)
	}
	switch {
	case u.Scheme != "file":
		if strings.HasPrefix(uri, "/") {
			return fmt.Errorf("%q is a path; a root is a file:// URI: %q", uri, "file://"+uri)
		}
		return fmt.Errorf("%q is not a file:// URI; a root is a directory, like \"file:///home/me/project\"", uri)
	case u.Opaque != "" || !strings.HasPrefix(u.Path, "/"):
		return fmt.Errorf("%q is not an absolute file:// URI; write file:// and an absolute path, like \"file:///home/me/project\"", uri)
	case u.Host != "" && u.Host != "localhost":
		return fmt.Errorf("%q names the host %q; a root is a directory on this machine, like \"file:///home/me/project\"", uri, u.Host)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(uri, "?") || strings.HasSuffix(uri, "#"):
		return fmt.Errorf("%q has a query or fragment; a root is a directory, like \"file:///home/me/project\"", uri)
	}
	return nil
}
