package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Handler serves the control API for b; mount it at /control/.
func Handler(b Backend) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /control/v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(b.Snapshot())
	})
	mux.HandleFunc("POST /control/v1/servers/{name}/{action}", func(w http.ResponseWriter, r *http.Request) {
		action := Action(r.PathValue("action"))
		if !slices.Contains(Actions, action) {
			http.Error(w, fmt.Sprintf("unknown action %q (reconnect, enable or disable)", action), http.StatusNotFound)
			return
		}
		if err := b.Act(r.PathValue("name"), action); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// Server is the control socket of a running instance.
type Server struct {
	path string
	srv  *http.Server
	done chan struct{}
}

// Listen makes the instance's socket in dir (see [Dir]) and serves b on
// it until Close. The socket is named after the process id, so several
// instances of one user each have their own.
func Listen(dir string, b Backend) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	path := filepath.Join(dir, socketPrefix+strconv.Itoa(os.Getpid())+socketSuffix)
	_ = os.Remove(path) // a previous process of this pid left it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &Server{path: path, done: make(chan struct{}),
		srv: &http.Server{Handler: Handler(b), ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ends with ErrServerClosed
	}()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving, waits for the requests in flight (up to a
// second), and removes the socket.
func (s *Server) Close() error {
	ctx, cancel := contextWithTimeout(time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	_ = os.Remove(s.path)
	return err
}
