package console_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/console"
	"github.com/mcpvisor/mcpvisor/manager"
)

// get fetches path with client and returns the status and body.
func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, client *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := client.PostForm(u, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token of the forms on a page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	require.NotNil(t, m, "no CSRF token on the page")
	return m[1]
}

// Without the token a visitor sees the login form and nothing of the
// servers, on every page; the token posted to the form logs it in with an
// HttpOnly, SameSite=Strict cookie; a wrong one does not.
func TestTokenGuardsEveryPage(t *testing.T) {
	f := newFixture(t, "s3cret-token", nil)
	anon := browser(t)
	for _, path := range []string{"/ui", "/ui/", "/ui/servers/demo", "/ui/events", "/ui/clients", "/ui/stream"} {
		code, body := get(t, anon, f.url+path)
		require.Equal(t, http.StatusUnauthorized, code, path)
		require.Contains(t, body, `type="password"`, path)
		if path != "/ui/servers/demo" { // the visitor's own address is sent back, as where to go
			require.NotContains(t, body, "demo", path)
		}
		require.NotContains(t, body, "srv-", path) // no row
		require.NotContains(t, body, "echo", path)
		require.NotContains(t, body, "claude-code", path)
	}
	resp, body := post(t, anon, f.url+"/ui/servers/demo/disable", url.Values{})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NotContains(t, body, "demo")

	resp, body = post(t, anon, f.url+"/ui/login", url.Values{"token": {"wrong"}, "next": {"/ui"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "not the token")
	code, _ := get(t, anon, f.url+"/ui")
	require.Equal(t, http.StatusUnauthorized, code)

	resp, _ = post(t, anon, f.url+"/ui/login", url.Values{"token": {"s3cret-token"}, "next": {"/ui/events"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/events", resp.Header.Get("Location"))
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	require.True(t, cookies[0].HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)
	require.NotContains(t, cookies[0].Value, "s3cret-token")

	code, body = get(t, anon, f.url+"/ui")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, ">demo</a>")
	require.Contains(t, body, "connected")

	// A cookie made up, or signed by another console, is no login.
	other := browser(t)
	u, _ := url.Parse(f.url + "/ui")
	other.Jar.SetCookies(u, []*http.Cookie{{Name: cookies[0].Name, Value: cookies[0].Value[:len(cookies[0].Value)-2] + "AA", Path: "/ui"}})
	code, _ = get(t, other, f.url+"/ui")
	require.Equal(t, http.StatusUnauthorized, code)
}

// A script may use the bearer token instead of the form.
func TestBearerTokenIsAccepted(t *testing.T) {
	f := newFixture(t, "s3cret-token", nil)
	req, err := http.NewRequest("GET", f.url+"/ui", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), ">demo</a>")
}

// A peer that keeps posting wrong tokens is shut out: even the right
// token is refused for a while.
func TestWrongTokensShutAPeerOut(t *testing.T) {
	f := newFixture(t, "s3cret-token", nil)
	c := browser(t)
	for range 6 {
		resp, _ := post(t, c, f.url+"/ui/login", url.Values{"token": {"guess"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp, body := post(t, c, f.url+"/ui/login", url.Values{"token": {"s3cret-token"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Contains(t, body, "Too many wrong tokens")
	require.Empty(t, resp.Cookies())
}

// clock is a console's clock that a test moves.
type clock struct{ at atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Unix(1_000_000, 0).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *clock) advance(d time.Duration) { c.at.Add(int64(d)) }

// A script guessing the token as a bearer token is slowed as a login
// form's guesser is, and by the same count: past the free guesses even
// the right token is refused (429, saying when to try again, in
// Retry-After too), on the pages and at the login form, until the
// shut-out is over; each wrong one after it doubles the next. A browser
// that logged in before is not shut out.
func TestWrongBearerTokensShutAPeerOut(t *testing.T) {
	clk := newClock()
	f := newFixtureWith(t, console.Options{Token: "s3cret-token", Now: clk.now}, nil)
	getWith := func(token string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", f.url+"/ui", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	loggedIn := browser(t)
	resp, _ := post(t, loggedIn, f.url+"/ui/login", url.Values{"token": {"s3cret-token"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for i := range 6 {
		resp, _ := getWith("guess")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "wrong token %d", i+1)
	}
	code, _ := get(t, loggedIn, f.url+"/ui")
	require.Equal(t, http.StatusOK, code, "a browser logged in before is not shut out")
	resp, body := getWith("s3cret-token")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Contains(t, body, "try again in 1 s")
	resp, _ = post(t, browser(t), f.url+"/ui/login", url.Values{"token": {"s3cret-token"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the login form counts the bearer tokens too")

	clk.advance(time.Second)
	resp, _ = getWith("guess")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = getWith("s3cret-token")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "twice as long as the last")
	clk.advance(2 * time.Second)
	resp, _ = getWith("s3cret-token")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// Actions need the page's CSRF token: a form posted without it (or with
// another session's) changes nothing.
func TestActionsNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t, "", nil)
	c := browser(t)
	_, page := get(t, c, f.url+"/ui")
	token := csrfOf(t, page)

	for _, form := range []url.Values{{}, {"csrf": {"forged"}}} {
		resp, body := post(t, c, f.url+"/ui/servers/demo/disable", form)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Contains(t, body, "CSRF")
	}
	// Another visitor's token is not this one's.
	_, other := get(t, browser(t), f.url+"/ui")
	require.NotEqual(t, token, csrfOf(t, other))
	resp, _ := post(t, c, f.url+"/ui/servers/demo/disable", url.Values{"csrf": {csrfOf(t, other)}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	st, err := f.m.Status("demo")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State)

	resp, _ = post(t, c, f.url+"/ui/servers/demo/disable", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	f.waitState(t, "demo", manager.StateDisabled)
	_, page = get(t, c, f.url+"/ui")
	require.Contains(t, page, "Enable demo")

	resp, _ = post(t, c, f.url+"/ui/servers/demo/enable", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	f.waitState(t, "demo", manager.StateConnected)

	resp, _ = post(t, c, f.url+"/ui/servers/nosuch/reconnect", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// What a server says in its errors is shown as text, never as markup,
// and its secrets are hidden there and in the events.
func TestLastErrorIsEscapedAndRedacted(t *testing.T) {
	f := newFixture(t, "", map[string]string{"API_KEY": "hunter2-hunter2"})
	f.dial.breakWith(fmt.Errorf("<img src=x onerror=alert(1)> key hunter2-hunter2 \u202erefused: %w", errBoom))
	require.NoError(t, f.m.Reconnect("demo")) // tries at once, and fails with that
	require.Eventually(t, func() bool {
		st, err := f.m.Status("demo")
		return err == nil && st.State == manager.StateBackoff && strings.Contains(st.LastError, "refused")
	}, 20*time.Second, 10*time.Millisecond)
	c := browser(t)
	for _, path := range []string{"/ui", "/ui/servers/demo", "/ui/events"} {
		_, page := get(t, c, f.url+path)
		require.Contains(t, page, "&lt;img src=x onerror=alert(1)&gt;", path)
		require.NotContains(t, page, "<img src=x", path)
		require.NotContains(t, page, "hunter2-hunter2", path)
		require.Contains(t, page, `\u202erefused`, path) // a bidi override, made visible
		require.NotContains(t, page, "\u202e", path)
	}
	_, page := get(t, c, f.url+"/ui")
	require.Contains(t, page, "backing off")
	require.Regexp(t, `data-next="\d+">next attempt in \d+s<`, page)
}

// The try form is made from the tool's schema, and calls the tool with
// the arguments typed as the schema says; arguments the schema refuses
// are refused as a call's are.
func TestTryATool(t *testing.T) {
	f := newFixture(t, "", nil)
	c := browser(t)
	_, page := get(t, c, f.url+"/ui/servers/demo")
	require.Contains(t, page, `<input type="number" id="f-add-a" name="arg.a" step="1" required>`)
	require.Contains(t, page, "Add two integers.")
	require.Contains(t, page, `&#34;type&#34;: &#34;integer&#34;`) // the schema, shown
	token := csrfOf(t, page)

	resp, body := post(t, c, f.url+"/ui/servers/demo/tools/add", url.Values{"csrf": {token}, "arg.a": {"2"}, "arg.b": {"3"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Regexp(t, `<pre class="output" id="tool-result">5</pre>`, body)

	resp, body = post(t, c, f.url+"/ui/servers/demo/tools/add", url.Values{"csrf": {token}, "arg.a": {"2.5"}, "arg.b": {"3"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, `argument &#34;a&#34;: &#34;2.5&#34; is not an integer`)

	resp, body = post(t, c, f.url+"/ui/servers/demo/tools/add", url.Values{"csrf": {token}, "arg.a": {"2"}})
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, body, "INVALID_ARGUMENTS")

	resp, _ = post(t, c, f.url+"/ui/servers/demo/tools/nosuch", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// The pages list the clients and the events, filtered.
func TestClientsAndEventsPages(t *testing.T) {
	f := newFixture(t, "", nil)
	c := browser(t)
	_, page := get(t, c, f.url+"/ui/clients")
	require.Contains(t, page, "claude-code")
	require.Contains(t, page, "<code>/mcp</code>")
	require.Contains(t, page, `<td>dev</td><td>search</td><td class="num">2</td>`)

	_, page = get(t, c, f.url+"/ui/events?kind=connected")
	require.Contains(t, page, `<span class="kind">connected</span>`)
	require.NotContains(t, page, `<span class="kind">added</span>`)
	_, page = get(t, c, f.url+"/ui/events")
	require.Contains(t, page, `<span class="kind">added</span>`)
}

// The stream sends a server's row anew when its state changes, and ends
// when the console closes.
func TestStreamSendsRowsAsTheyChange(t *testing.T) {
	f := newFixture(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/ui/stream", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan()) // retry:

	require.NoError(t, f.m.Disable("demo"))
	sawRow := false
	for !sawRow && lines.Scan() {
		l := lines.Text()
		if strings.HasPrefix(l, "data: ") && strings.Contains(l, `data-state=\"disabled\"`) {
			sawRow = true
		}
	}
	require.True(t, sawRow, "no row saying disabled came: %v", lines.Err())

	f.c.Close()
	for lines.Scan() {
	}
	require.NoError(t, lines.Err(), "the stream should end cleanly when the console closes")
}

// A server's row says what it offers (counts, tool names, what the tools
// cost a model in tokens), its health, and its requests, errors and
// latency as calls are made.
func TestServerRowShowsOffersAndCalls(t *testing.T) {
	f := newFixture(t, "", nil)
	c := browser(t)
	_, page := get(t, c, f.url+"/ui")
	require.Regexp(t, `4 / 1 / 1<div class="sub"[^>]*>≈\d+ tokens</div><div class="sub tools"[^>]*>add, echo, fail, sleep</div>`, page)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.m.Call(ctx, "demo.echo", map[string]any{"text": "x"}, manager.CallOptions{})
	require.NoError(t, err)
	_, err = f.m.Call(ctx, "demo.fail", map[string]any{"message": "no"}, manager.CallOptions{})
	require.NoError(t, err)
	_, page = get(t, c, f.url+"/ui")
	require.Regexp(t, `<td class="num">2</td>\s*<td class="num">1</td>\s*<td class="num">[0-9.]+[µm]?s</td>`, page)

	_, page = get(t, c, f.url+"/ui/servers/demo")
	require.Regexp(t, `its definition costs ≈\d+ tokens`, page)
	require.Contains(t, page, `<span class="kind">tool_call</span>`)
	require.Regexp(t, `<code>fail</code></td><td><span class="sub">mcpvisor</span></td><td class="num">[0-9.]+[µm]?s</td><td><span class="wait">tool error</span>`, page)
	require.Regexp(t, `<code>echo</code></td><td><span class="sub">mcpvisor</span></td><td class="num">[0-9.]+[µm]?s</td><td><span class="ok">ok</span>`, page)
}

// Only a request let in is reported as authenticated (the gateway then
// stops counting its connection against the cap on unauthenticated ones).
func TestOnlyVisitorsLetInCountAsAuthenticated(t *testing.T) {
	f := newFixture(t, "", nil)
	var let atomic.Int32
	c := console.New(console.Options{Backend: f.m, Token: "s3cret-token", Authenticated: func(*http.Request) { let.Add(1) }})
	defer c.Close()
	srv := httptest.NewServer(c)
	defer srv.Close()

	code, _ := get(t, browser(t), srv.URL+"/ui")
	require.Equal(t, http.StatusUnauthorized, code)
	resp, _ := post(t, browser(t), srv.URL+"/ui/servers/demo/reconnect", url.Values{})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Zero(t, let.Load())

	req, err := http.NewRequest("GET", srv.URL+"/ui", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int32(1), let.Load())
}

// The stylesheet and the script are served to anyone (the login page
// uses them), the templates to no one; and the login sends a visitor on
// only to a page of the console.
func TestAssetsAndWhereALoginLeads(t *testing.T) {
	f := newFixture(t, "s3cret-token", nil)
	c := browser(t)
	for path, ctype := range map[string]string{"/ui/assets/console.css": "text/css", "/ui/assets/console.js": "text/javascript"} {
		resp, err := c.Get(f.url + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Type"), ctype, path)
	}
	for _, path := range []string{"/ui/assets/", "/ui/assets/servers.html", "/ui/assets/layout.html"} {
		code, _ := get(t, c, f.url+path)
		require.Contains(t, []int{http.StatusNotFound, http.StatusUnauthorized}, code, path)
	}
	for next, want := range map[string]string{"//evil.example/": "/ui", "/uievil": "/ui", "https://evil.example/ui": "/ui", "/ui/events?kind=failed": "/ui/events?kind=failed"} {
		resp, _ := post(t, c, f.url+"/ui/login", url.Values{"token": {"s3cret-token"}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, want, resp.Header.Get("Location"), next)
	}
}
