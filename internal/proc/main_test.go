package proc_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/proc"
)

// TestMain lets the test binary serve as the servers' shim, as mcpvisor
// does, and fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	proc.RunShimIfAsked()
	goleak.VerifyTestMain(m)
}
