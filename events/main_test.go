package events_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// drainer, publisher and Log loop started by these tests must have
// returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
