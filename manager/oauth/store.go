package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultDir is where the host keeps its state when no directory is
// given: $XDG_STATE_HOME/mcpvisor, or ~/.local/state/mcpvisor.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpvisor"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for login tokens: $XDG_STATE_HOME is not set and %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpvisor"), nil
}

// Record is what the Store keeps for one server: a grant per
// authorization server, and which one is in use.
type Record struct {
	Current string            `json:"current"` // issuer of the grant in use
	Grants  map[string]*Grant `json:"grants"`  // by issuer
	// Challenge is the server's last request for a login that no login
	// has answered yet, if any: the next login follows it, in this
	// process or another.
	Challenge *Challenge `json:"challenge,omitempty"`
}

// Challenge is a refusal that asked for an OAuth login: a 401, or a 403
// insufficient_scope, with its Bearer WWW-Authenticate header, met by a
// request to URL (any request of a session, not only the first). It holds
// no secret: the header names the metadata and the scopes.
type Challenge struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Header string `json:"www_authenticate"`
}

// Grant is one authorization of the host by one authorization server for
// one server.
type Grant struct {
	Issuer   string `json:"issuer"`
	Resource string `json:"resource,omitempty"`
	// ClientID and ClientSecret are the client as the authorization server
	// knows it. Registered marks a dynamic registration, which the next
	// login reuses; the secret is kept only for those (a pre-registered
	// one stays in the config).
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	Registered   bool   `json:"registered,omitempty"`
	AuthURL      string `json:"authorization_endpoint,omitempty"`
	TokenURL     string `json:"token_endpoint"`
	AuthStyle    int    `json:"auth_style,omitempty"` // golang.org/x/oauth2.AuthStyle
	// Scopes were asked for and granted; Pending were asked for by the
	// server since (step-up) and go into the next login.
	Scopes  []string `json:"scopes,omitempty"`
	Pending []string `json:"pending_scopes,omitempty"`
	Token   Token    `json:"token"`
}

// Token is an access token and what refreshes it. Empty once the
// authorization server refused a refresh: only a login helps then.
type Token struct {
	Access   string    `json:"access_token,omitempty"`
	Type     string    `json:"token_type,omitempty"`
	Refresh  string    `json:"refresh_token,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	IssuedAt time.Time `json:"issued_at,omitzero"`
}

// current returns the grant in use, or nil.
func (r *Record) current() *Grant {
	if r == nil {
		return nil
	}
	return r.Grants[r.Current]
}

// clone returns a deep copy of r, so that one owner's edits do not reach
// another's copy.
func (r *Record) clone() *Record {
	if r == nil {
		return nil
	}
	c := &Record{Current: r.Current, Grants: make(map[string]*Grant, len(r.Grants)), Challenge: r.Challenge}
	for k, g := range r.Grants {
		cg := *g
		c.Grants[k] = &cg
	}
	return c
}

// Store keeps Records in files under a directory of their own: one file
// per server, readable by the user only. Its methods may be called from any
// goroutine; concurrent writers of one server's file are settled by
// rename, the last one wins.
type Store struct {
	dir string // .../mcpvisor/oauth
}

// NewStore keeps its files in dir/oauth; dir is the host's state
// directory (see DefaultDir).
func NewStore(dir string) *Store { return &Store{dir: filepath.Join(dir, "oauth")} }

// Dir is the directory the files are in.
func (s *Store) Dir() string { return s.dir }

// path is the file of server (a name key): its name with anything but
// letters, digits, '-' and '_' escaped, so that no name leaves the
// directory or collides with another.
func (s *Store) path(server string) string {
	var b strings.Builder
	for _, c := range []byte(server) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return filepath.Join(s.dir, b.String()+".json")
}

// Load reads server's record; nil if there is none.
func (s *Store) Load(server string) (*Record, error) {
	data, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading login tokens: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading login tokens from %s: not valid JSON (log in again to replace it)", s.path(server))
	}
	if r.Grants == nil {
		r.Grants = map[string]*Grant{}
	}
	return &r, nil
}

// Save writes server's record: to a temporary file of mode 0600 in the
// directory (made 0700), then renamed over the old one, so that a reader
// never sees half a file.
func (s *Store) Save(server string, r *Record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone: the tokens'
	// directory is the user's only, whoever made it.
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("saving login tokens: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("saving login tokens: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	if err := os.Rename(tmp, s.path(server)); err != nil {
		return fmt.Errorf("saving login tokens: %w", err)
	}
	return nil
}

// Forget deletes server's record. It reports whether there was one.
func (s *Store) Forget(server string) (bool, error) {
	err := os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("forgetting login tokens: %w", err)
	}
	return true, nil
}

// stamp identifies the version of server's file: its modification time
// and size, zero if there is none. A login in another process changes it.
func (s *Store) stamp(server string) fileStamp {
	fi, err := os.Stat(s.path(server))
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size()}
}

type fileStamp struct {
	mod  time.Time
	size int64
}
