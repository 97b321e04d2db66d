package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Every remedy a client can meet is worded for it, saying whether
// retrying helps: a remedy the manager gains is not passed on as silence.
// (A name conflict's only comes from declaring a server, which no client
// does.)
func TestEveryRemedyIsWordedForAModel(t *testing.T) {
	now := time.Now()
	for k := manager.RemedyNone + 1; !strings.HasPrefix(k.String(), "RemedyKind("); k++ {
		if k == manager.RemedyRename {
			continue
		}
		a := remedyAdvice(manager.Remedy{Kind: k, Server: "s", At: now.Add(4 * time.Second)}, now)
		require.Contains(t, strings.ToLower(a), "retrying", "remedy %s", k)
		require.NotContains(t, a, "mcp_", "remedy %s", k)
	}
	require.Contains(t, remedyAdvice(manager.Remedy{Kind: manager.RemedyWait, At: now.Add(4 * time.Second)}, now), "in 4s")
	require.Contains(t, remedyAdvice(manager.Remedy{Kind: manager.RemedyWait, At: now.Add(-time.Second)}, now), "again now")
}
