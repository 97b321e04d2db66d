package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/control"
)

// `mcpvisor status` shows the protocol version each server negotiated,
// and a dash for one never connected.
func TestStatusShowsTheNegotiatedProtocol(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var out strings.Builder
	printSnapshot(&out, control.Snapshot{Version: "test", PID: 7, Started: now.Add(-time.Minute), Servers: []control.ServerRow{
		{Name: "everything", State: "connected", Transport: "stdio", Protocol: "2025-11-25", Tools: 28},
		{Name: "web", State: "connected", Transport: "http", Protocol: "2026-07-28", Tools: 3},
		{Name: "later", State: "connecting", Transport: "stdio"},
	}}, now)
	require.Equal(t, `mcpvisor test, pid 7, up 1m0s
SERVER      STATE       PROTOCOL    TOOLS  RESOURCES  PROMPTS  NOTE
everything  connected   2025-11-25  28     0          0        
web         connected   2026-07-28  3      0          0        
later       connecting  -           0      0          0        
`, out.String())
}
