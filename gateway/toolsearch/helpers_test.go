package toolsearch_test

import (
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func itoa(n int) string { return strconv.Itoa(n) }

func join(s []string) string { return strings.Join(s, ", ") }
