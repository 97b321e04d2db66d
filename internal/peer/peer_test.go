package peer_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/peer"
)

// Addresses of one IPv6 /64 are one peer: a host that rotates through its
// own addresses is still counted once. An IPv4 address is itself.
func TestOfGroupsAnIPv6Slash64(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "[2001:db8:1:2:aaaa::1]:5000"
	a := peer.Of(r)
	r.RemoteAddr = "[2001:db8:1:2:bbbb::9]:6000"
	assert.Equal(t, a, peer.Of(r))
	assert.Equal(t, "2001:db8:1:2::/64", a)
	r.RemoteAddr = "192.0.2.7:80"
	assert.Equal(t, "192.0.2.7", peer.Of(r))
}

// The scheme is matched in any case and the token trimmed; another scheme
// is no bearer token.
func TestBearer(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "bearer  abc ")
	tok, ok := peer.Bearer(r)
	assert.True(t, ok)
	assert.Equal(t, "abc", tok)
	r.Header.Set("Authorization", "Basic abc")
	_, ok = peer.Bearer(r)
	assert.False(t, ok)
}
