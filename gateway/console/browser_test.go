package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// These tests drive the console in a real headless Chromium. A machine
// without one fails them, saying how to install it: scripts/test installs
// Debian's chromium package when it runs as root.

// chromiumPath is the Chromium (or Chrome) on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH: the web console's browser tests need one; install it (Debian: apt-get install -y chromium; scripts/test does this when run as root)")
	return ""
}

// newTab starts a headless Chromium and returns a tab of it; the browser
// ends with the test.
func newTab(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 400), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	return ctx
}

// in runs steps with a generous bound.
func in(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// navigating runs steps that make the page navigate (a click on a form's
// button), and waits for the new page to load.
func navigating(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	_, err := chromedp.RunResponse(ctx, steps...)
	require.NoError(t, err)
}

// until waits for a JavaScript predicate to hold on the page.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

// eval is the value of a JavaScript expression on the page.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// stateOf is a JavaScript expression: the state the row of server shows.
func stateOf(server string) string {
	return fmt.Sprintf(`(document.querySelector('#srv-%x .state') || {}).textContent`, server)
}

// The servers page shows the demo server connected; when it fails, its
// row turns to backing off with a countdown that runs, without a reload;
// the Reconnect button brings it back.
func TestBrowserFollowsAServerLive(t *testing.T) {
	f := newFixture(t, "", nil)
	require.NoError(t, f.m.Add("weather", manager.Spec{Transport: manager.TransportStdio, Command: []string{filepath.Join(t.TempDir(), "weather-server")}}))
	f.waitState(t, "weather", manager.StateFailed)
	tab := newTab(t)
	in(t, tab, chromedp.Navigate(f.url+"/ui"), until(stateOf("demo")+` === 'connected'`),
		until(`document.getElementById('live').textContent === 'live'`))
	require.Contains(t, eval[string](t, tab, `document.querySelector('#srv-64656d6f .tools').textContent`), "echo")
	require.Equal(t, "failed", eval[string](t, tab, stateOf("weather")))
	shoot(t, tab)

	in(t, tab, chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	f.dial.breakWith(errBoom)
	in(t, tab, until(stateOf("demo")+` === 'backing off'`),
		until(`/^next attempt in \d+s$/.test(document.querySelector('#srv-64656d6f .countdown').textContent)`))
	first := eval[string](t, tab, `document.querySelector('#srv-64656d6f .countdown').textContent`)
	in(t, tab, until(fmt.Sprintf(`document.querySelector('#srv-64656d6f .countdown').textContent !== %q`, first)))
	require.True(t, eval[bool](t, tab, `window.notReloaded === true`), "the page was reloaded")

	f.dial.mend()
	navigating(t, tab, chromedp.Click(chromedp.CSS(`button[aria-label="Reconnect demo"]`)))
	in(t, tab, until(`location.search.includes('done=')`), until(stateOf("demo")+` === 'connected'`))
	st, err := f.m.Status("demo")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State)
}

// The try form of demo.add calls it with the numbers typed in and shows
// the sum.
func TestBrowserTriesATool(t *testing.T) {
	f := newFixture(t, "", nil)
	tab := newTab(t)
	in(t, tab, chromedp.Navigate(f.url+"/ui/servers/demo"),
		chromedp.SetValue(chromedp.CSS("#f-add-a"), "2"), chromedp.SetValue(chromedp.CSS("#f-add-b"), "3"))
	navigating(t, tab, chromedp.Click(chromedp.CSS(`#tool-add button[type=submit]`)))
	in(t, tab, until(`document.getElementById('tool-result') !== null`))
	require.Equal(t, "5", eval[string](t, tab, `document.getElementById('tool-result').textContent`))
}

// Without the token the browser gets the login form and nothing else;
// with it, the servers.
func TestBrowserNeedsTheToken(t *testing.T) {
	f := newFixture(t, "s3cret-token", nil)
	tab := newTab(t)
	in(t, tab, chromedp.Navigate(f.url+"/ui"), until(`document.readyState === 'complete'`))
	require.Equal(t, 1, eval[int](t, tab, `document.querySelectorAll('form input[type=password]').length`))
	require.NotContains(t, eval[string](t, tab, `document.body.innerText`), "demo")

	in(t, tab, chromedp.SetValue(chromedp.CSS("#token"), "s3cret-token"))
	navigating(t, tab, chromedp.Submit(chromedp.CSS("#token")))
	in(t, tab, until(stateOf("demo")+` === 'connected'`))
	// The cookie is out of the page's reach.
	require.Empty(t, eval[string](t, tab, `document.cookie`))
}

// shoot saves the page as docs/console.png when MCPVISOR_SCREENSHOT is
// set (to refresh the one the docs show), after checking that it is small
// enough to keep in the repository.
func shoot(t *testing.T, tab context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1200, 330)))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.Less(t, len(png), 100<<10, "the screenshot is too big to keep")
	if os.Getenv("MCPVISOR_SCREENSHOT") != "" {
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "console.png"), png, 0o644))
	}
}
