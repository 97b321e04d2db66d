package console

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Backend is what the console shows and steers: a *manager.Manager.
type Backend interface {
	Statuses() []manager.Status
	Status(name string) (manager.Status, error)
	Metrics(name string) (manager.Metrics, error)
	RecentCalls(name string) ([]manager.RecentCall, error)
	Tools(server string) ([]manager.ToolInfo, error)
	StderrTail(server string) (string, error)
	Bus() *events.Bus
	Reconnect(name string) error
	Enable(name string) error
	Disable(name string) error
	Login(ctx context.Context, server string, opts manager.LoginOptions) error
	Call(ctx context.Context, name string, args any, opts manager.CallOptions) (*mcp.CallToolResult, error)
}

var _ Backend = (*manager.Manager)(nil)

// Client is one client of the gateway, as the clients page lists it.
type Client struct {
	ID        string
	Name      string
	Version   string
	Transport string // "stdio", "http" or "sse"
	Endpoint  string // "/mcp", "/servers/git/mcp", …
	Toolset   string // the toolset of a toolset's endpoint, else ""
	Mode      string // "direct", "search", "code"; "" until it lists its tools
	InFlight  int    // its calls in flight upstream
	Since     time.Time
}

// SessionTTL is how long a login lasts.
const SessionTTL = 12 * time.Hour

// Options configures a Console.
type Options struct {
	// Backend is the manager whose servers are shown. Required.
	Backend Backend
	// Token, if set, is what a visitor must give to see or do anything;
	// the same token as the MCP endpoints'.
	Token string
	// ViewToken, if set (with Token), is a second token whose holder may
	// see the console but not act: no reconnect, enable, disable, login,
	// reload or tool call. It opens nothing but the console.
	ViewToken string
	// Clients lists the gateway's clients for the clients page; if nil,
	// the page says there are none.
	Clients func() []Client
	// Logger receives the console's warnings (wrong tokens again and
	// again). If nil, they are discarded.
	Logger *slog.Logger
	// CallTimeout bounds a tool tried from the console. If zero, 60s.
	CallTimeout time.Duration
	// Authenticated, if set, is told of each request let in (with the
	// token, or any when there is none): gateway.Authenticated, so that a
	// console's connections count as authenticated ones.
	Authenticated func(*http.Request)
	// Reload, if set, reloads the config file (startup.lua) and says
	// what changed; the servers page then offers it. It runs on a
	// goroutine of its own, after the page has answered, and is not
	// cancelled by Close: a reload may move the listener, closing this
	// console.
	Reload func(ctx context.Context) (string, error)
	// ReloadTimeout bounds a reload. If zero, 2 minutes.
	ReloadTimeout time.Duration
	// LoginTimeout bounds a login started from a server's page. If zero,
	// 5 minutes.
	LoginTimeout time.Duration
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// Console serves the web console. Create it with New.
type Console struct {
	opts  Options
	log   *slog.Logger
	tmpl  *template.Template
	mux   *http.ServeMux
	auth  *auth
	costs tokens.Cache    // of the tools' definitions
	ctx   context.Context // ends at Close: streams and logins end with it
	close context.CancelFunc

	tasksMu sync.Mutex
	// tasksMu guards tasks: the latest reload ("reload") and login
	// ("login/NAME").
	tasks map[string]*task
}

//go:embed assets
var assets embed.FS

// New returns a console for opts.Backend.
func New(opts Options) *Console {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 60 * time.Second
	}
	if opts.ReloadTimeout == 0 {
		opts.ReloadTimeout = 2 * time.Minute
	}
	if opts.LoginTimeout == 0 {
		opts.LoginTimeout = 5 * time.Minute
	}
	if opts.Clients == nil {
		opts.Clients = func() []Client { return nil }
	}
	c := &Console{opts: opts, log: opts.Logger, tasks: map[string]*task{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.close = context.WithCancel(context.Background())
	c.auth = newAuth(opts.Token, opts.ViewToken, opts.Now, c.log)
	c.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))
	c.routes()
	return c
}

// Close ends the console's live streams (a browser's stream would
// otherwise hold up an HTTP server's shutdown). Pages are still served.
func (c *Console) Close() { c.close() }

// ServeHTTP serves the console's pages under /ui.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	c.mux.ServeHTTP(w, r)
}

// publicAssets are the files served as they are, to anyone (the login
// page needs them): the stylesheet and the script, not the templates.
var publicAssets = map[string]string{"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := publicAssets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(b)
}

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /ui/assets/{file}", serveAsset)
	m.HandleFunc("GET /ui/login", c.loginPage)
	m.HandleFunc("POST /ui/login", c.login)
	m.HandleFunc("POST /ui/logout", c.logout)
	m.HandleFunc("GET /ui", c.reader(c.serversPage))
	m.HandleFunc("GET /ui/{$}", c.reader(c.serversPage))
	m.HandleFunc("GET /ui/servers/{name}", c.reader(c.serverPage))
	m.HandleFunc("GET /ui/clients", c.reader(c.clientsPage))
	m.HandleFunc("GET /ui/events", c.reader(c.eventsPage))
	m.HandleFunc("GET /ui/stream", c.reader(c.stream))
	m.HandleFunc("POST /ui/reload", c.actor(c.reload))
	m.HandleFunc("POST /ui/servers/{name}/{action}", c.actor(c.act))
	m.HandleFunc("POST /ui/servers/{name}/tools/{tool}", c.actor(c.try))
	c.mux = m
}
