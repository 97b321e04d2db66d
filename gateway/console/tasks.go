package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/manager"
)

// task is an action that outlives the request that started it: reloading
// the config (which may move the very listener the page came through)
// or logging in to a server (which waits for the visitor to come back
// from the authorization server). Its output is shown on a page.
type task struct {
	what    string
	started time.Time
	first   chan struct{} // closed at its first output or its end
	once    sync.Once

	mu sync.Mutex
	// mu guards out, done and err.
	out  []byte
	done bool
	err  string
}

// maxTaskOutput bounds what a task's output keeps.
const maxTaskOutput = 16 << 10

func newTask(what string, now time.Time) *task {
	return &task{what: what, started: now, first: make(chan struct{})}
}

// Write keeps p (the first maxTaskOutput bytes of the output).
func (t *task) Write(p []byte) (int, error) {
	t.mu.Lock()
	if room := maxTaskOutput - len(t.out); room > 0 {
		t.out = append(t.out, p[:min(len(p), room)]...)
	}
	t.mu.Unlock()
	t.once.Do(func() { close(t.first) })
	return len(p), nil
}

// finish records the task's end and err.
func (t *task) finish(err error) {
	t.mu.Lock()
	t.done = true
	if err != nil {
		t.err = err.Error()
	}
	t.mu.Unlock()
	t.once.Do(func() { close(t.first) })
}

// taskView is a task as a page shows it.
type taskView struct {
	What    string
	Started time.Time
	Running bool
	Output  string
	Err     string
	Link    string // the authorization URL a login asks the visitor to open
}

// linkRe finds the authorization URL in a login's output.
var linkRe = regexp.MustCompile(`https?://\S+`)

func (t *task) view() *taskView {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	v := &taskView{What: t.what, Started: t.started, Running: !t.done, Output: string(t.out), Err: t.err}
	t.mu.Unlock()
	if m := linkRe.FindString(v.Output); m != "" {
		if u, err := url.Parse(m); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			v.Link = u.String()
		}
	}
	return v
}

// errTaskRunning is why an action is refused while the same one runs.
var errTaskRunning = errors.New("already running: wait for it to end")

// start runs work on a goroutine of its own as the task key, unless that
// task is still running. The task's output is what work writes to it.
func (c *Console) start(key, what string, work func(t *task) error) (*task, error) {
	c.tasksMu.Lock()
	if old := c.tasks[key]; old != nil {
		old.mu.Lock()
		running := !old.done
		old.mu.Unlock()
		if running {
			c.tasksMu.Unlock()
			return old, errTaskRunning
		}
	}
	t := newTask(what, c.opts.Now())
	c.tasks[key] = t
	c.tasksMu.Unlock()
	go func() { t.finish(work(t)) }()
	return t, nil
}

// taskOf is the latest task key, or nil.
func (c *Console) taskOf(key string) *task {
	c.tasksMu.Lock()
	defer c.tasksMu.Unlock()
	return c.tasks[key]
}

// reload starts reloading the config and answers at once: the reload may
// stop the listener this request came through, or move it.
func (c *Console) reload(w http.ResponseWriter, r *http.Request, _ session) {
	if c.opts.Reload == nil {
		http.Error(w, "this mcpvisor has no config file to reload", http.StatusNotFound)
		return
	}
	q := url.Values{}
	_, err := c.start("reload", "reload the config", func(t *task) error {
		// Not the console's context: the reload may be what closes this
		// console (a listener moved), and must not cancel itself.
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.ReloadTimeout)
		defer cancel()
		summary, err := c.opts.Reload(ctx)
		_, _ = t.Write([]byte(summary))
		return err
	})
	if err != nil {
		q.Set("error", fmt.Sprintf("reload: %v", err))
	} else {
		q.Set("done", "reload: started; its outcome shows below once it ends")
	}
	http.Redirect(w, r, "/ui?"+q.Encode(), http.StatusSeeOther)
}

// loginWait is how long starting a login waits for its authorization URL
// before showing the server page (which then says the login is under way).
const loginWait = 15 * time.Second

// startLogin starts server's OAuth login and shows its page with the
// authorization URL to open once the login has one.
func (c *Console) startLogin(w http.ResponseWriter, r *http.Request, name string) {
	if _, err := c.opts.Backend.Status(name); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	q := url.Values{}
	t, err := c.start("login/"+name, "log in to "+name, func(t *task) error {
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.LoginTimeout)
		defer cancel()
		// "none": the browser to open the URL in is the visitor's, not
		// one on the machine mcpvisor runs on.
		return c.opts.Backend.Login(ctx, name, manager.LoginOptions{Out: t, Browser: "none"})
	})
	if err != nil {
		q.Set("error", fmt.Sprintf("log in to %s: %v", name, err))
	} else {
		timer := time.NewTimer(loginWait)
		select {
		case <-t.first:
		case <-timer.C:
		case <-r.Context().Done():
		}
		timer.Stop()
		q.Set("done", fmt.Sprintf("log in to %s: started", name))
	}
	http.Redirect(w, r, "/ui/servers/"+url.PathEscape(name)+"?"+q.Encode(), http.StatusSeeOther)
}
