package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce is how long the config must be quiet before a reload: an
// editor's save is several events (vim: rename, create, write, chmod).
const reloadDebounce = 100 * time.Millisecond

// configWatcher reloads the config file, the source of truth for the
// servers it declares, when its content changes on disk. It watches the
// directory, not the file, because editors save by renaming a new file over
// the old one; it debounces bursts of events and skips saves that left the
// content as it was (touch, :w without edits).
type configWatcher struct {
	path     string // absolute
	debounce time.Duration
	log      *slog.Logger
	reload   func(src string) // called on the watcher's goroutine
	last     [sha256.Size]byte
}

func newConfigWatcher(path, loaded string, log *slog.Logger, reload func(string)) (*configWatcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return &configWatcher{path: abs, debounce: reloadDebounce, log: log, reload: reload, last: sha256.Sum256([]byte(loaded))}, nil
}

// run watches until ctx ends. ready, if not nil, is closed once the watch
// is in place.
func (w *configWatcher) run(ctx context.Context, ready chan<- struct{}) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	if err := fw.Add(filepath.Dir(w.path)); err != nil {
		return err
	}
	// A save between the host reading the config and the watch starting
	// sent no event we could see: compare once now.
	w.check()
	if ready != nil {
		close(ready)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) == w.path {
				timer.Reset(w.debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.log.Warn("watching the config failed", "file", w.path, "error", err)
		case <-timer.C:
			w.check()
		}
	}
}

// check reloads if the file's content differs from what was last loaded.
func (w *configWatcher) check() {
	data, err := os.ReadFile(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("config file is gone; keeping the running servers", "file", w.path)
		return
	}
	if err != nil {
		w.log.Warn("cannot read the config", "file", w.path, "error", err)
		return
	}
	sum := sha256.Sum256(data)
	if sum == w.last {
		return
	}
	w.last = sum
	w.reload(string(data))
}
