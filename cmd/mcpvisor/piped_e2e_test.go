//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A program that drives mcpvisor through a pipe, writing a line and
// waiting for its answer, gets each answer before it writes the next:
// what has arrived runs when the pipe pauses after a complete statement.
func TestPipedInputRunsWhenItPauses(t *testing.T) {
	p := start(t, invocation{args: []string{"--no-watch", "--no-hud"}})
	_, err := p.stdin.Write([]byte("x = 20\nprint(x + 1)\n"))
	require.NoError(t, err)
	require.Equal(t, "21", p.line(10*time.Second), "the first lines did not run while the pipe stayed open")
	_, err = p.stdin.Write([]byte("print(x * 2)\n"))
	require.NoError(t, err)
	require.Equal(t, "40", p.line(10*time.Second))
	require.NoError(t, p.stdin.Close())
	require.True(t, p.wait(10*time.Second), "mcpvisor did not exit at the end of its input")
}
