package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// --fast-path takes on or off, and nothing else; without it the gateway
// follows MCPVISOR_FASTPATH.
func TestFastPathFlag(t *testing.T) {
	for _, v := range []string{"on", "off"} {
		cfg, err := parseFlags([]string{"--fast-path", v}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, v, cfg.fastPath)
	}
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Empty(t, cfg.fastPath, "the environment's, or the gateway's default")
	_, err = parseFlags([]string{"--fast-path", "fast"}, io.Discard)
	require.Error(t, err)
}
