package notify_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// publisher waiting for room must have returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
