package oauth

import (
	"net/http"
	"sync"
	"time"
)

// KeeperOptions configures a [Keeper].
type KeeperOptions struct {
	// Dir is the host's state directory; the tokens go in Dir/oauth. If
	// empty, [DefaultDir].
	Dir string
	// Transport carries the requests to authorization servers (metadata,
	// registration, tokens) and the login's probe of the server. If nil,
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// Keeper holds the grants of every server of a host. Make it with
// [NewKeeper]; it is safe for concurrent use.
type Keeper struct {
	store  *Store
	dirErr error // why there is no state directory, if there is none
	client *http.Client
	now    func() time.Time

	mu sync.Mutex // guards sources
	// sources by server name key; a Source outlives a server's removal,
	// which is harmless (it is a few fields) and keeps a re-declared
	// server's state.
	sources map[string]*Source
}

// NewKeeper returns a Keeper storing its grants as opts says.
func NewKeeper(opts KeeperOptions) *Keeper {
	k := &Keeper{sources: map[string]*Source{}, now: opts.Now}
	dir := opts.Dir
	if dir == "" {
		dir, k.dirErr = DefaultDir()
	}
	k.store = NewStore(dir)
	t := opts.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	k.client = &http.Client{Transport: t, Timeout: 30 * time.Second}
	if k.now == nil {
		k.now = time.Now
	}
	return k
}

// Store is where the grants are kept.
func (k *Keeper) Store() *Store { return k.store }

// Source returns the Source of the server whose name key is key (name is
// as declared, for messages), made on first use, with cfg as its auth
// declaration.
func (k *Keeper) Source(key, name string, cfg Config) *Source {
	k.mu.Lock()
	s, ok := k.sources[key]
	if !ok {
		s = newSource(name, key, k.store, k.client, cfg, k.now)
		k.sources[key] = s
	}
	k.mu.Unlock()
	if ok {
		s.setConfig(cfg)
	}
	return s
}

// Logout forgets the server's grants, in the Store and in its Source: its
// connections need a login. It reports whether there was anything stored.
func (k *Keeper) Logout(key, name string) (bool, error) {
	had := k.store.stamp(key) != fileStamp{}
	if err := k.source(key, name).forget(); err != nil {
		return had, err
	}
	return had, nil
}

// source returns the server's Source without changing its declaration.
func (k *Keeper) source(key, name string) *Source {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.sources[key]
	if !ok {
		s = newSource(name, key, k.store, k.client, Config{}, k.now)
		k.sources[key] = s
	}
	return s
}
