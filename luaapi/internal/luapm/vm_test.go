package luapm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yuin/gopher-lua/pm"

	"github.com/mcpvisor/mcpvisor/luaapi/internal/luapm"
)

// capturer is what pm's and luapm's MatchData have in common.
type capturer interface {
	CaptureLength() int
	Capture(int) int
	IsPosCapture(int) bool
}

// render renders matches as pm or luapm report them: per match its
// captures, with position captures marked.
func render[M capturer](mds []M, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, md := range mds {
		b.WriteString("[")
		for i := 0; i < md.CaptureLength(); i++ {
			if md.IsPosCapture(i) {
				b.WriteString("p")
			}
			fmt.Fprintf(&b, "%d ", md.Capture(i))
		}
		b.WriteString("]")
	}
	return b.String()
}

// pmFind is pm.Find with pm's panics (it has a few outside its recover)
// reported as errors.
func pmFind(p, s string, offset, limit int) (mds []*pm.MatchData, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return pm.Find(p, []byte(s), offset, limit)
}

func luapmFind(p, s string, offset, limit int) (mds []*luapm.MatchData, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return luapm.Find(context.Background(), p, s, offset, limit)
}

// TestFindMatchesPM: for every pattern, subject, offset and limit, luapm
// finds what gopher-lua's pm finds, capture for capture, and fails with
// the same errors.
func TestFindMatchesPM(t *testing.T) {
	patterns := []string{
		"", "a", "b", ".", "%a+", "%d*", "[%w_]+", "[^%s]+", "[a-c]", "[]]", "[^]]", "[a-]", "[%a-]", "[-a]",
		"^a", "^", "$", "^$", "a$", "a$b", "^(a+)", "(a*)", "()", "()a()", "(a)(b)", "((a)(b))", "(a(b)c)",
		"a-b", "a-", ".-b", "a?b", "a?", "a+?", ".*", ".*b", "^.-$", "(.-)%s*$",
		"%bab", "%b()", "%b(", "%b", "(a)%1", "(%a+) %1", "%1", "(a%1)", "%0",
		"%f[%a]", "%", "a%", "[a", "(a", "a)", "%z", "%A+", "%S+", "%p", "%c", "%x+", "%l%u",
		"(a*(.)%w(%s*))", "[%]]", "[%-]", "%.", "%%", "(%d+)%-(%d+)", "x*y*z*", "(h)(e)(l)(l)(o)",
	}
	subjects := []string{
		"", "a", "b", "ab", "aab", "abab", "aaa", "ba", "hello world", "((a)(b))", "a(b(c)d)e",
		"  padded  ", "2024-01-02", "a]b-c^d$", "ABC abc 123", "\x00\x01\x7f\xff", "aa aa", "abcabc",
	}
	for _, p := range patterns {
		for _, s := range subjects {
			for _, offset := range []int{0, 1, len(s), len(s) + 1} {
				for _, limit := range []int{-1, 0, 1, 2} {
					want := render(pmFind(p, s, offset, limit))
					got := render(luapmFind(p, s, offset, limit))
					if got != want {
						t.Errorf("Find(%q, %q, %d, %d) = %s, pm: %s", p, s, offset, limit, got, want)
					}
				}
			}
		}
	}
}

// pathological backtracks exponentially: 20 optional-length items that
// can split the run of a's every way before failing at "c"; the sandbox's
// tests run the same pattern from Lua.
var pathological = struct{ pattern, subject string }{strings.Repeat("a*", 20) + "c", strings.Repeat("a", 20) + "b"}

// TestInterrupted: a done context stops a match that would run for
// hours, with an error wrapping ErrInterrupted and the cause.
func TestInterrupted(t *testing.T) {
	cause := errors.New("slice budget exceeded")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 20*time.Millisecond, cause)
	defer cancel()
	_, err := luapm.Find(ctx, pathological.pattern, pathological.subject, 0, 1)
	require.ErrorIs(t, err, luapm.ErrInterrupted)
	require.ErrorIs(t, err, cause)
	require.Equal(t, "pattern matching interrupted: slice budget exceeded", err.Error())

	// Already cancelled: stopped within the first checkEvery steps.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = luapm.Find(ctx, pathological.pattern, pathological.subject, 0, 1)
	require.ErrorIs(t, err, context.Canceled)

	// %b scanning a long subject from every position (quadratic) counts
	// the bytes it scans as steps.
	_, err = luapm.Find(ctx, "%b()", strings.Repeat("(", 1<<16), 0, -1)
	require.ErrorIs(t, err, context.Canceled)

	// Cheap matches in a row are counted across Next calls.
	pat, err := luapm.Compile("a")
	require.NoError(t, err)
	it := pat.Iter(strings.Repeat("a", 10000), 0, -1)
	n := 0
	for {
		md, err := it.Next(ctx)
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
			break
		}
		require.NotNil(t, md, "ran to the end without looking at the context")
		n++
	}
	require.Less(t, n, 10000)

	// An interrupted Iter can go on with a live context from where it
	// stopped.
	md, err := it.Next(context.Background())
	require.NoError(t, err)
	require.Equal(t, n, md.Capture(0))
}

// BenchmarkFind compares luapm with pm on everyday patterns; the
// "overhead" metric is luapm's time per op over pm's.
func BenchmarkFind(b *testing.B) {
	subject := strings.Repeat("key_1 = value-2; ", 20) + "2024-01-02T03:04:05Z"
	for _, bc := range []struct{ name, pattern string }{
		{"word", "%a+"},
		{"trim", "^%s*(.-)%s*$"},
		{"date", "(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)"},
		{"kv", "(%w+)%s*=%s*([%w-]+)"},
		// One attempt that backtracks a lot: the VM's steps alone.
		{"backtrack", "^" + strings.Repeat("[%w_ =;-]*", 2) + "#"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var pmTime, luapmTime time.Duration
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for b.Loop() {
				start := time.Now()
				if _, err := pm.Find(bc.pattern, []byte(subject), 0, -1); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := luapm.Find(ctx, bc.pattern, subject, 0, -1); err != nil {
					b.Fatal(err)
				}
				luapmTime += time.Since(mid)
				pmTime += mid.Sub(start)
			}
			b.ReportMetric(float64(pmTime.Nanoseconds())/float64(b.N), "pm-ns/op")
			b.ReportMetric(float64(luapmTime.Nanoseconds())/float64(b.N), "luapm-ns/op")
			b.ReportMetric(float64(luapmTime)/float64(pmTime), "overhead")
		})
	}
}
