package main

// The config watcher (hot reload: watch the directory, debounce, skip
// unchanged content) against a real file in a temporary directory, changed
// the ways editors and tools change files. Each test waits on the reload
// channel (or on the watcher's log) with a deadline; "no reload" is
// asserted over a window of several debounce periods and then confirmed by
// a real edit being the next reload.

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logMessages is a slog handler that hands each record's message to a
// channel (dropping them if nobody reads).
type logMessages chan string

func (l logMessages) Enabled(context.Context, slog.Level) bool { return true }
func (l logMessages) Handle(_ context.Context, r slog.Record) error {
	select {
	case l <- r.Message:
	default:
	}
	return nil
}
func (l logMessages) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logMessages) WithGroup(string) slog.Handler      { return l }

// watched is a config file under a running configWatcher.
type watched struct {
	dir, path string
	debounce  time.Duration
	reloads   chan string // the content of each reload, in order
	logs      logMessages
}

const initialConfig = `mcp_add("a", {command = {"demo"}})` + "\n"

// startWatcher writes initialConfig to dir/startup.lua, starts a watcher
// on it as the host does (with that content as loaded) and returns once
// the watch is in place. The watcher stops when the test ends.
func startWatcher(t *testing.T, debounce time.Duration) *watched {
	t.Helper()
	return startWatcherOn(t, debounce, initialConfig)
}

// startWatcherOn is startWatcher with onDisk in the file instead of what
// was loaded (initialConfig).
func startWatcherOn(t *testing.T, debounce time.Duration, onDisk string) *watched {
	t.Helper()
	dir := t.TempDir()
	w := &watched{dir: dir, path: filepath.Join(dir, "startup.lua"), debounce: debounce,
		reloads: make(chan string, 64), logs: make(logMessages, 64)}
	require.NoError(t, os.WriteFile(w.path, []byte(onDisk), 0o644))
	cw, err := newConfigWatcher(w.path, initialConfig, slog.New(w.logs), func(src string) { w.reloads <- src })
	require.NoError(t, err)
	require.Equal(t, reloadDebounce, cw.debounce, "the default debounce")
	cw.debounce = debounce
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- cw.run(ctx, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the watcher did not stop after its ctx ended")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the watcher stopped before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was not ready within 10s")
	}
	return w
}

// reload waits for the next reload and requires its content.
func (w *watched) reload(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-w.reloads:
		require.Equal(t, want, got, "reloaded content")
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload within 10s (want content %q)", want)
	}
}

// noReload requires that no reload comes within several debounce periods.
func (w *watched) noReload(t *testing.T) {
	t.Helper()
	select {
	case got := <-w.reloads:
		t.Fatalf("unexpected reload with content %q", got)
	case <-time.After(5 * w.debounce):
	}
}

// logged waits for a log message.
func (w *watched) logged(t *testing.T, msg string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-w.logs:
			if got == msg {
				return
			}
		case <-deadline:
			t.Fatalf("%q not logged within 10s", msg)
		}
	}
}

func (w *watched) write(t *testing.T, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, name), []byte(content), 0o644))
}

func (w *watched) rename(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.Rename(filepath.Join(w.dir, from), filepath.Join(w.dir, to)))
}

func (w *watched) remove(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(w.dir, name)))
}

// TestWatcherReloadsOnceOnSave: every way of saving a new content reloads
// exactly once, with that content.
func TestWatcherReloadsOnceOnSave(t *testing.T) {
	const edited = `mcp_add("a", {command = {"demo"}})` + "\n" + `mcp_add("b", {command = {"demo"}})` + "\n"
	tests := []struct {
		name string
		save func(t *testing.T, w *watched) // saves edited
	}{
		{"plain in-place write", func(t *testing.T, w *watched) {
			w.write(t, "startup.lua", edited)
		}},
		{"write then rename", func(t *testing.T, w *watched) {
			w.write(t, ".startup.lua.tmp", edited)
			w.rename(t, ".startup.lua.tmp", "startup.lua")
		}},
		{"sed -i", func(t *testing.T, w *watched) {
			sed, err := exec.LookPath("sed")
			if err != nil {
				// What sed -i does: write a temporary file beside the
				// original, then rename it over the original.
				w.write(t, "sedAbC123", edited)
				w.rename(t, "sedAbC123", "startup.lua")
				return
			}
			out, err := exec.Command(sed, "-i", `$a mcp_add("b", {command = {"demo"}})`, w.path).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}},
		{"vim-style save with a backup", func(t *testing.T, w *watched) {
			w.rename(t, "startup.lua", "startup.lua~")
			w.write(t, "startup.lua", edited)
			w.remove(t, "startup.lua~")
		}},
		{"moved in from another directory", func(t *testing.T, w *watched) {
			other := filepath.Join(t.TempDir(), "startup.lua")
			require.NoError(t, os.WriteFile(other, []byte(edited), 0o644))
			require.NoError(t, os.Rename(other, w.path))
		}},
		{"truncate, then write", func(t *testing.T, w *watched) {
			f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_TRUNC, 0)
			require.NoError(t, err)
			_, err = f.WriteString(edited)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // independent directories and watchers
			w := startWatcher(t, reloadDebounce)
			tt.save(t, w)
			w.reload(t, edited)
			w.noReload(t)
		})
	}
}

// TestWatcherIgnoresWhatIsNotAnEdit: a touch, a rewrite with the same
// content and writes to other files of the directory do not reload; a real
// edit afterwards is the next reload.
func TestWatcherIgnoresWhatIsNotAnEdit(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, w *watched)
	}{
		{"touch", func(t *testing.T, w *watched) {
			if touch, err := exec.LookPath("touch"); err == nil {
				out, err := exec.Command(touch, w.path).CombinedOutput()
				require.NoError(t, err, "%s", out)
				return
			}
			now := time.Now()
			require.NoError(t, os.Chtimes(w.path, now, now))
		}},
		{"chmod", func(t *testing.T, w *watched) {
			require.NoError(t, os.Chmod(w.path, 0o600))
		}},
		{"same content rewritten", func(t *testing.T, w *watched) {
			w.write(t, "startup.lua", initialConfig)
		}},
		{"same content saved vim-style", func(t *testing.T, w *watched) {
			w.rename(t, "startup.lua", "startup.lua~")
			w.write(t, "startup.lua", initialConfig)
			w.remove(t, "startup.lua~")
		}},
		{"another file in the directory", func(t *testing.T, w *watched) {
			w.write(t, "other.lua", "x = 1\n")
			w.write(t, "other.lua", "x = 2\n")
			w.rename(t, "other.lua", "third.lua")
			w.remove(t, "third.lua")
			require.NoError(t, os.Mkdir(filepath.Join(w.dir, "scripts"), 0o755))
			w.write(t, "scripts/helpers.lua", "return {}\n")
		}},
		{"a file whose name starts with the config's", func(t *testing.T, w *watched) {
			w.write(t, "startup.lua.bak", "x = 1\n")
			w.write(t, "startup.lua~", "x = 1\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // independent directories and watchers
			w := startWatcher(t, reloadDebounce)
			tt.change(t, w)
			w.noReload(t)
			const edit = "-- a real edit\n" + initialConfig
			w.write(t, "startup.lua", edit)
			w.reload(t, edit)
			w.noReload(t)
		})
	}
}

// TestWatcherDebouncesBursts: five writes within the debounce are one
// reload, with the final content.
func TestWatcherDebouncesBursts(t *testing.T) {
	// A longer debounce than the default, so that the burst is within it
	// even on a loaded machine.
	w := startWatcher(t, 300*time.Millisecond)
	var last string
	for i := 1; i <= 5; i++ {
		last = initialConfig + "-- save " + string(rune('0'+i)) + "\n"
		w.write(t, "startup.lua", last)
	}
	w.reload(t, last)
	w.noReload(t)
}

// TestWatcherKeepsServersWhenTheFileIsDeleted: deleting the config does
// not reload (the running servers stay); the watch survives, so the file
// coming back with new content reloads, and with the old content does not.
func TestWatcherKeepsServersWhenTheFileIsDeleted(t *testing.T) {
	w := startWatcher(t, reloadDebounce)
	w.remove(t, "startup.lua")
	w.logged(t, "config file is gone; keeping the running servers")
	w.noReload(t)

	// Back with the content last loaded: nothing to do.
	w.write(t, "startup.lua", initialConfig)
	w.noReload(t)

	const edit = "-- back, edited\n" + initialConfig
	w.remove(t, "startup.lua")
	w.logged(t, "config file is gone; keeping the running servers")
	w.write(t, "startup.lua", edit)
	w.reload(t, edit)
	w.noReload(t)
}

// TestWatcherFollowsSuccessiveSaves: the directory is watched, not the
// file, so an editor replacing the file's inode on every save does not
// lose the watch; a broken edit and its fix are each reloaded.
func TestWatcherFollowsSuccessiveSaves(t *testing.T) {
	w := startWatcher(t, reloadDebounce)
	for i, content := range []string{
		initialConfig + "-- one\n",
		"local x = = 1\n", // broken: the watcher reloads, the host keeps the servers
		initialConfig + "-- one\n",
		initialConfig,
	} {
		if i%2 == 0 {
			w.rename(t, "startup.lua", "startup.lua~")
			w.write(t, "startup.lua", content)
			w.remove(t, "startup.lua~")
		} else {
			w.write(t, ".tmp", content)
			w.rename(t, ".tmp", "startup.lua")
		}
		w.reload(t, content)
	}
	w.noReload(t)
}

// TestWatcherStopsWithItsContext: run returns once its ctx ends, and a
// missing directory is an error, not a hang.
func TestWatcherStopsWithItsContext(t *testing.T) {
	cw, err := newConfigWatcher(filepath.Join(t.TempDir(), "gone", "startup.lua"), "", slog.New(slog.DiscardHandler), func(string) {})
	require.NoError(t, err)
	require.Error(t, cw.run(context.Background(), nil))

	w := startWatcher(t, reloadDebounce)
	_ = w // its cleanup cancels the ctx and requires run to return
}

// TestWatcherCatchesAnEditBeforeTheWatch: the host reads and runs the
// config before the watch is in place; an edit saved in between (while a
// slow startup.lua runs) is reloaded as soon as the watch starts, not at
// the next save.
func TestWatcherCatchesAnEditBeforeTheWatch(t *testing.T) {
	const edited = "-- saved while the config was loading\n" + initialConfig
	w := startWatcherOn(t, reloadDebounce, edited)
	w.reload(t, edited)
	w.noReload(t)
}

// watcherRunning reports whether some goroutine is in a configWatcher's
// run.
func watcherRunning() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*configWatcher).run")
}

// The host owns its config watcher: shutdown stops it and waits for it
// before it closes the runtime, whatever the context it was started with,
// so no reload can start on a runtime being closed and nothing of it is
// left when the host is gone.
func TestShutdownJoinsTheConfigWatcher(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	const src = "-- nothing declared\n"
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	logger := slog.New(slog.DiscardHandler)
	out := &swapWriter{w: io.Discard}
	tel, err := newTelemetry(context.Background(), out, logger)
	require.NoError(t, err)
	h := startHost(config{}, logger, out, out, dir, tel, nil, nil)
	h.watch(context.Background(), path, src) // a context that never ends
	require.Eventually(t, watcherRunning, 10*time.Second, time.Millisecond, "the watcher started")
	require.NoError(t, h.shutdown())
	require.False(t, watcherRunning(), "the config watcher outlived the host's shutdown")
}
