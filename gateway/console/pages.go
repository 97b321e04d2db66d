package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/peer"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/manager"
)

// page is what every page template gets.
type page struct {
	Title      string
	Nav        string // which nav link is current
	Authorized bool
	LoggedIn   bool   // a logout button makes sense
	Live       bool   // the page follows /ui/stream
	CSRF       string // of action forms; "" when the visitor may only view
	LogoutCSRF string
	Flash      string
	FlashTone  string
	Data       any
}

// rowData is what the row template gets: the row and the CSRF token of
// its action forms ("" shows none).
type rowData struct {
	Row  row
	CSRF string
}

var funcs = template.FuncMap{
	"rowid":   rowID,
	"pathesc": url.PathEscape,
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"plural":  plural,
	// Text that servers and clients wrote, with what could disguise it
	// (bidi overrides, zero-width and control characters) made visible.
	"line": textsafe.Line,
	"para": textsafe.Block,
}

// plural says n of what: "1 failed attempt", "3 failed attempts".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// maxEvents is how many recent events a page shows.
const maxEvents = 200

// render writes the page template name with p.
func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	var b bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		c.log.Error("console: rendering a page failed", "page", name, "error", err)
		http.Error(w, "the console could not render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// newPage is a page for s.
func newPage(s session, title, nav string) page {
	return page{Title: title, Nav: nav, Authorized: true, LoggedIn: s.loggedIn, Live: true, CSRF: s.formCSRF(), LogoutCSRF: s.csrf}
}

// reader lets through visitors who may see the console; the others get
// the login form.
func (c *Console) reader(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait := c.auth.shutOut(r) // before this request's token counts
		s, ok := c.auth.visitor(w, r)
		if !ok && wait > 0 {
			c.tooManyGuesses(w, r.URL.RequestURI(), wait)
			return
		}
		if !ok {
			c.renderLogin(w, http.StatusUnauthorized, r.URL.RequestURI(), "")
			return
		}
		c.authenticated(r)
		h(w, r, s)
	}
}

// actor lets through actions of visitors who may act and whose form
// carries their session's CSRF token.
func (c *Console) actor(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait := c.auth.shutOut(r) // before this request's token counts
		s, ok := c.auth.visitor(w, r)
		if !ok && wait > 0 {
			c.tooManyGuesses(w, "/ui", wait)
			return
		}
		if !ok {
			c.renderLogin(w, http.StatusUnauthorized, "/ui", "Log in to act on servers.")
			return
		}
		c.authenticated(r)
		if !s.act {
			http.Error(w, "this login may only view the console: log in with the token that allows actions (MCPVISOR_TOKEN) to act", http.StatusForbidden)
			return
		}
		if !c.auth.csrfOK(r, s) {
			http.Error(w, "this form is stale or did not come from the console (its CSRF token is missing or wrong): reload the page and try again", http.StatusForbidden)
			return
		}
		h(w, r, s)
	}
}

// authenticated tells Options.Authenticated that r was let in.
func (c *Console) authenticated(r *http.Request) {
	if c.opts.Authenticated != nil {
		c.opts.Authenticated(r)
	}
}

// tooManyGuesses refuses a peer shut out for wrong tokens, saying when
// to try again (in Retry-After too), with the login form to come back to.
func (c *Console) tooManyGuesses(w http.ResponseWriter, next string, wait time.Duration) {
	secs := peer.RetryAfter(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	c.renderLogin(w, http.StatusTooManyRequests, next, fmt.Sprintf("Too many wrong tokens: try again in %d s.", secs))
}

func (c *Console) renderLogin(w http.ResponseWriter, status int, next, flash string) {
	p := page{Title: "Log in", Data: next, Flash: flash}
	if flash != "" {
		p.FlashTone = "bad"
	}
	c.render(w, status, "login", p)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.auth.visitor(w, r); ok {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
		return
	}
	c.renderLogin(w, http.StatusOK, "/ui", "")
}

// login checks the posted token and, when it is right, sets the session
// cookie and sends the visitor on to the page it asked for.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := r.PostFormValue("next")
	if next != "/ui" && !strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "/ui?") {
		next = "/ui" // only a page of the console's own
	}
	if c.auth.open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if wait := c.auth.shutOut(r); wait > 0 {
		c.tooManyGuesses(w, next, wait)
		return
	}
	level := c.auth.level(r.PostFormValue("token"))
	if level == levelNone {
		c.auth.guessed(r)
		c.renderLogin(w, http.StatusUnauthorized, next, "That is not the token.")
		return
	}
	c.auth.issue(w, r, level)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if s, ok := c.auth.cookie(r); ok && c.auth.csrfOK(r, s) {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// serversView is what the servers page shows.
type serversView struct {
	Rows      []rowData
	CanReload bool
	Reload    *taskView // the latest reload started from the console
}

func (c *Console) serversPage(w http.ResponseWriter, r *http.Request, s session) {
	rows := c.rows()
	v := serversView{Rows: make([]rowData, len(rows)), CanReload: c.opts.Reload != nil, Reload: c.taskOf("reload").view()}
	for i, rw := range rows {
		v.Rows[i] = rowData{Row: rw, CSRF: s.formCSRF()}
	}
	p := newPage(s, "Servers", "servers")
	p.Data = v
	p.Flash, p.FlashTone = flash(r)
	c.render(w, http.StatusOK, "servers", p)
}

// flash is the outcome of the action a page was redirected from.
func flash(r *http.Request) (string, string) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return e, "bad"
	}
	return q.Get("done"), ""
}

// serverDetail is what the server page shows.
type serverDetail struct {
	Row    rowData
	Tools  []toolView
	Calls  []callView
	Events []events.Event
	Result *callResult
	Stdio  bool   // the server is a process: it has a stderr
	Stderr string // its last stderr lines, secrets hidden
	// LogsIn: the server is reached over HTTP, so it may log in; Login
	// is the latest login started from the console.
	LogsIn bool
	Login  *taskView
}

// callView is one recent call of a server's tool.
type callView struct {
	Time    time.Time
	Tool    string
	Client  string // "" for the host
	Took    string
	Outcome string // "ok", "tool error", "cancelled" or the error's code
	Tone    string
	Error   string
}

// maxCalls is how many recent calls the server page lists.
const maxCalls = 20

// callsOf are the server's recent calls (newest first), as the server
// page lists them: the manager keeps them whether or not their events
// were published.
func callsOf(calls []manager.RecentCall) []callView {
	var out []callView
	for _, p := range calls {
		cv := callView{Time: p.Time, Tool: p.Tool, Client: p.Client, Took: roundDuration(p.Duration), Outcome: "ok", Tone: "ok"}
		switch {
		case p.Cancelled:
			cv.Outcome, cv.Tone = "cancelled", "off"
		case p.Code != "":
			cv.Outcome, cv.Tone, cv.Error = string(p.Code), "bad", p.Error
		case p.IsError:
			cv.Outcome, cv.Tone = "tool error", "wait"
		}
		if out = append(out, cv); len(out) == maxCalls {
			break
		}
	}
	return out
}

func (c *Console) serverPage(w http.ResponseWriter, r *http.Request, s session) {
	c.showServer(w, r, s, http.StatusOK, nil)
}

func (c *Console) showServer(w http.ResponseWriter, r *http.Request, s session, status int, res *callResult) {
	name := r.PathValue("name")
	st, err := c.opts.Backend.Status(name)
	if err != nil {
		http.Error(w, fmt.Sprintf("no server %q: %v", name, err), http.StatusNotFound)
		return
	}
	d := serverDetail{Row: rowData{Row: c.rowOf(st), CSRF: s.formCSRF()}, Result: res}
	if tools, err := c.opts.Backend.Tools(st.Name); err == nil {
		for _, t := range tools {
			d.Tools = append(d.Tools, c.newToolView(t))
		}
	}
	if st.Transport == manager.TransportStdio {
		d.Stdio = true
		d.Stderr, _ = c.opts.Backend.StderrTail(st.Name)
	}
	if st.Transport == manager.TransportHTTP || st.Transport == manager.TransportSSE {
		d.LogsIn = true
		d.Login = c.taskOf("login/" + st.Name).view()
	}
	d.Events = c.history(st.Name, "")
	if calls, err := c.opts.Backend.RecentCalls(st.Name); err == nil {
		d.Calls = callsOf(calls)
	}
	p := newPage(s, st.Name, "servers")
	p.Data = d
	p.Flash, p.FlashTone = flash(r)
	c.render(w, status, "server", p)
}

// history is the bus's recent events, newest first, of server and kind
// ("" for any).
func (c *Console) history(server string, kind events.Kind) []events.Event {
	var out []events.Event
	all := c.opts.Backend.Bus().History(0)
	for i := len(all) - 1; i >= 0 && len(out) < maxEvents; i-- {
		e := all[i]
		if (server == "" || e.Server == server) && (kind == "" || e.Kind == kind) {
			out = append(out, e)
		}
	}
	return out
}

func (c *Console) clientsPage(w http.ResponseWriter, r *http.Request, s session) {
	clients := c.opts.Clients()
	slices.SortFunc(clients, func(a, b Client) int { return a.Since.Compare(b.Since) })
	p := newPage(s, "Clients", "clients")
	p.Live = false
	p.Data = clients
	c.render(w, http.StatusOK, "clients", p)
}

// eventsView is what the events page shows.
type eventsView struct {
	Server, Kind string
	Servers      []string
	Kinds        []string
	Events       []events.Event
}

func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, s session) {
	v := eventsView{Server: r.URL.Query().Get("server"), Kind: r.URL.Query().Get("kind")}
	for _, st := range c.opts.Backend.Statuses() {
		v.Servers = append(v.Servers, st.Name)
	}
	slices.Sort(v.Servers)
	for _, k := range events.Kinds {
		v.Kinds = append(v.Kinds, string(k))
	}
	slices.Sort(v.Kinds)
	v.Events = c.history(v.Server, events.Kind(v.Kind))
	p := newPage(s, "Events", "events")
	p.Data = v
	c.render(w, http.StatusOK, "events", p)
}

// act reconnects, enables or disables a server, then goes back to the
// page the form was on.
func (c *Console) act(w http.ResponseWriter, r *http.Request, _ session) {
	name, action := r.PathValue("name"), r.PathValue("action")
	var err error
	switch action {
	case "reconnect":
		err = c.opts.Backend.Reconnect(name)
	case "enable":
		err = c.opts.Backend.Enable(name)
	case "disable":
		err = c.opts.Backend.Disable(name)
	case "login":
		c.startLogin(w, r, name)
		return
	default:
		http.Error(w, fmt.Sprintf("no action %q: want reconnect, enable, disable or login", action), http.StatusNotFound)
		return
	}
	back := "/ui"
	if ref, perr := url.Parse(r.Referer()); perr == nil && strings.HasPrefix(ref.Path, "/ui/servers/") {
		back = ref.Path
	}
	q := url.Values{}
	if err != nil {
		var me *manager.Error
		if errors.As(err, &me) && me.Code == manager.CodeServerNotFound {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		q.Set("error", fmt.Sprintf("%s %s: %v", action, name, err))
	} else {
		q.Set("done", fmt.Sprintf("%s %s: done", action, name))
	}
	http.Redirect(w, r, back+"?"+q.Encode(), http.StatusSeeOther)
}
