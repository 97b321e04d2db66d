package tokens

import (
	"hash/maphash"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultCacheSize is the number of definitions a Cache remembers when its
// size is zero.
const DefaultCacheSize = 8192

// Cache remembers the cost of the tool definitions it has counted, keyed
// by a hash of their JSON, so that listing the same catalogue again (a
// dashboard's refresh, every endpoint and toolset of a gateway) encodes
// nothing. A definition that changes is counted anew. When it holds Size
// definitions it forgets them all and starts over, which bounds its memory
// whatever servers do. The zero value is ready to use.
type Cache struct {
	// Size is how many definitions are kept. If zero, DefaultCacheSize.
	Size int

	seedOnce sync.Once
	seed     maphash.Seed

	mu sync.Mutex // mu guards costs
	// costs maps a hash of a definition's JSON to its token count.
	costs map[uint64]int
}

// Tool is what Tool(t) is, counted at most once per definition.
func (c *Cache) Tool(t *mcp.Tool) int {
	key, b, ok := c.key(t)
	if !ok {
		return 0
	}
	if n, hit := c.lookup(key); hit {
		return n
	}
	n := Count(string(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	size := c.Size
	if size <= 0 {
		size = DefaultCacheSize
	}
	if c.costs == nil || len(c.costs) >= size {
		c.costs = make(map[uint64]int)
	}
	c.costs[key] = n
	return n
}

// Counted is what Tool(t) would answer if c has counted t's definition
// already; it never counts, so it is cheap enough for any goroutine.
func (c *Cache) Counted(t *mcp.Tool) (int, bool) {
	key, _, ok := c.key(t)
	if !ok {
		return 0, true // a definition that cannot be encoded costs nothing
	}
	return c.lookup(key)
}

// key is the hash t's definition is remembered by, and the definition.
func (c *Cache) key(t *mcp.Tool) (uint64, []byte, bool) {
	b, ok := definition(t)
	if !ok {
		return 0, nil, false
	}
	c.seedOnce.Do(func() { c.seed = maphash.MakeSeed() })
	return maphash.Bytes(c.seed, b), b, true
}

func (c *Cache) lookup(key uint64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, hit := c.costs[key]
	return n, hit
}

// Tools is the sum of c.Tool over ts.
func (c *Cache) Tools(ts []*mcp.Tool) int {
	n := 0
	for _, t := range ts {
		n += c.Tool(t)
	}
	return n
}

// Len is the number of definitions c remembers.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.costs)
}
