package luaapi_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// BenchmarkMcpAddWhileConnecting declares a new server per iteration while
// every server's dial blocks until the benchmark ends, so all of them stay
// connecting: mcp_add records intent and returns without waiting for any
// connection. ns/op is the mean time of one Exec of a small chunk calling
// mcp_add. Each iteration also Execs an (almost) empty chunk, interleaved so
// both see the same GC and scheduler weather; add/empty-chunk is the ratio
// of their medians, i.e. what mcp_add adds to running any chunk.
func BenchmarkMcpAddWhileConnecting(b *testing.B) {
	gate := make(chan struct{})
	dial := func(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
		select {
		case <-gate: // the benchmark is over
		case <-ctx.Done(): // removed by the manager's Close
		}
		return nil, errors.New("benchmark over")
	}
	r := newTestRuntime(b, dial)
	b.Cleanup(func() { close(gate) }) // runs before the runtime's cleanup
	ctx := context.Background()
	exec := func(src string) time.Duration {
		start := time.Now()
		if _, err := r.Exec(ctx, src, "bench"); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	exec(`n = 0`)
	const (
		empty = `n = n`
		add   = `n = n + 1 mcp_add("s" .. n, {command = {"x"}})`
	)
	for range 100 { // warm up the loop and the allocator
		exec(empty)
	}

	emptyTimes := make([]time.Duration, 0, b.N)
	addTimes := make([]time.Duration, 0, b.N)
	var addTotal time.Duration
	b.ResetTimer()
	for range b.N {
		emptyTimes = append(emptyTimes, exec(empty))
		d := exec(add)
		addTimes = append(addTimes, d)
		addTotal += d
	}
	b.StopTimer()
	b.ReportMetric(float64(addTotal.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(median(addTimes))/float64(median(emptyTimes)), "add/empty-chunk")

	// Every server was declared and none has connected: mcp_add did not wait.
	res, err := r.Exec(ctx, `
		local connecting = 0
		for _, st in pairs(mcp_status()) do
			if st.state == "connecting" then connecting = connecting + 1 end
		end
		return #mcp_servers(), connecting`, "check")
	if err != nil {
		b.Fatal(err)
	}
	want := strconv.Itoa(b.N)
	if len(res.Values) != 2 || res.Values[0] != want || res.Values[1] != want {
		b.Fatalf("servers, connecting = %q, want %s of each", res.Values, want)
	}
}

// BenchmarkMcpCallVsManager is the per-chunk cost: one whole chunk per
// call. It compares Exec of a chunk making one mcp_call with manager.Call
// directly, both against the in-memory demo echo tool and interleaved per
// iteration. ns/op is the mean of the Lua path; per-chunk-overhead-µs is
// the difference of the two paths' medians (chunk compile, task and
// coroutine creation, loop hand-offs, conversions); manager-call-µs is the
// direct path's median. Both paths are dominated by the SDK's JSON
// handling and its GC, hence medians. BenchmarkMcpCallInLoop isolates what
// mcp_call itself adds.
func BenchmarkMcpCallVsManager(b *testing.B) {
	r := newTestRuntime(b, nil)
	r.addDemo(b, "demo")
	ctx := context.Background()
	args := map[string]any{"text": "hi"}
	direct := func() time.Duration {
		start := time.Now()
		res, err := r.m.Call(ctx, "demo.echo", args, manager.CallOptions{})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return d
	}
	const src = `return mcp_call("demo.echo", {text = "hi"}).text`
	viaLua := func() time.Duration {
		start := time.Now()
		res, err := r.Exec(ctx, src, "bench")
		d := time.Since(start)
		if err != nil || len(res.Values) != 1 || res.Values[0] != "hi" {
			b.Fatal(err, res.Values)
		}
		return d
	}
	for range 100 { // warm up both paths
		direct()
		viaLua()
	}

	directTimes := make([]time.Duration, 0, b.N)
	luaTimes := make([]time.Duration, 0, b.N)
	var luaTotal time.Duration
	b.ResetTimer()
	for range b.N {
		directTimes = append(directTimes, direct())
		d := viaLua()
		luaTimes = append(luaTimes, d)
		luaTotal += d
	}
	b.StopTimer()
	b.ReportMetric(float64(luaTotal.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(median(directTimes).Nanoseconds())/1e3, "manager-call-µs")
	b.ReportMetric(float64((median(luaTimes)-median(directTimes)).Nanoseconds())/1e3, "per-chunk-overhead-µs")
}

// BenchmarkMcpCallInLoop is the per-call cost of mcp_call inside a running
// chunk: ONE chunk runs `for i = 1, N do mcp_call("demo.echo", {text =
// "x"}) end` with N = b.N, and N direct manager.Call are made from Go, half
// before the chunk and half after, all against the in-memory demo server.
// The chunk times each call with os.clock (monotonic wall time) and the
// whole loop; Go times each direct call. Reported:
//
//   - ns/op: the Lua loop's mean per call (compiling the chunk and sorting
//     its timings excluded);
//   - manager-call-µs: the direct path's mean per call;
//   - lua-added-µs-per-call: the difference of the two means (argument
//     conversion, the yield, the goroutine, the hand-off back to the loop,
//     the resume and the result table; target ≤ 20 µs). Means include GC
//     and move with the machine's load, hence also
//   - lua-added-µs-p50: the difference of the two paths' medians;
//   - lua-added-allocs/call: the difference in heap allocations per call,
//     counted with runtime.MemStats around each phase.
func BenchmarkMcpCallInLoop(b *testing.B) {
	r := newTestRuntime(b, nil)
	r.addDemo(b, "demo")
	ctx := context.Background()
	args := map[string]any{"text": "x"}
	var directTimes []time.Duration
	direct := func(n int) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var total time.Duration
		for range n {
			start := time.Now()
			res, err := r.m.Call(ctx, "demo.echo", args, manager.CallOptions{})
			d := time.Since(start)
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			total += d
			directTimes = append(directTimes, d)
		}
		runtime.ReadMemStats(&after)
		return total, after.Mallocs - before.Mallocs
	}
	// viaLua returns the loop's time and its median call, both measured
	// inside the chunk, and the allocations of the whole Exec.
	viaLua := func(n int) (loop, p50 time.Duration, allocs uint64) {
		src := fmt.Sprintf(`local n, clock = %d, os.clock
			local times = {}
			local start = clock()
			for i = 1, n do
				local t0 = clock()
				local res, err = mcp_call("demo.echo", {text = "x"})
				times[i] = clock() - t0
				if not res then error(tostring(err)) end
			end
			local loop = clock() - start
			table.sort(times)
			return loop * 1e9, times[math.floor(n / 2) + 1] * 1e9`, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := r.Exec(ctx, src, "bench")
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if len(res.Values) != 2 {
			b.Fatalf("chunk returned %q", res.Values)
		}
		ns := func(s string) time.Duration {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				b.Fatalf("chunk returned %q", res.Values)
			}
			return time.Duration(f)
		}
		return ns(res.Values[0]), ns(res.Values[1]), after.Mallocs - before.Mallocs
	}
	direct(200) // warm up both paths
	viaLua(200)
	directTimes = directTimes[:0]

	b.ResetTimer()
	d1, a1 := direct(b.N / 2)
	luaLoop, luaP50, luaAllocs := viaLua(b.N)
	d2, a2 := direct(b.N - b.N/2)
	b.StopTimer()
	n := float64(b.N)
	luaPer := float64(luaLoop.Nanoseconds()) / n
	directPer := float64((d1 + d2).Nanoseconds()) / n
	b.ReportMetric(luaPer, "ns/op")
	b.ReportMetric(directPer/1e3, "manager-call-µs")
	b.ReportMetric((luaPer-directPer)/1e3, "lua-added-µs-per-call")
	b.ReportMetric(float64((luaP50-median(directTimes)).Nanoseconds())/1e3, "lua-added-µs-p50")
	b.ReportMetric(float64(luaAllocs)/n-float64(a1+a2)/n, "lua-added-allocs/call")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkExecChunk is the fixed cost of running any chunk: Exec of a
// chunk that does nothing (post to the loop, compile, new task and
// coroutine, resume, finish, hand-back). It is what BenchmarkMcpCallVsManager's
// per-chunk overhead pays besides mcp_call itself.
func BenchmarkExecChunk(b *testing.B) {
	r := newTestRuntime(b, nil)
	ctx := context.Background()
	for range 100 {
		if _, err := r.Exec(ctx, `local x = 1`, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := r.Exec(ctx, `local x = 1`, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventToHook is the path from a publish on the bus to a Lua hook
// having run: the bus, the runtime's subscriber goroutine, the hand-off to
// the loop, the event table and the hook's task.
//
//   - latency: one event at a time; ns/op is the mean and median-ns the
//     median of per-event samples (target ≤ 5µs).
//   - sustain-10k-per-s: each op publishes 10,000 events over one second
//     at an even pace; hooks-run/published is the share of them whose
//     hook had run, counted after a short drain (1 means none lost).
func BenchmarkEventToHook(b *testing.B) {
	setup := func(b *testing.B) (*testRuntime, *printCounter) {
		r, pc := newPrintCountingRuntime(b)
		r.run(b, `mcp_on("notification", function() print() end, {server = "bench"})`)
		return r, pc
	}
	b.Run("latency", func(b *testing.B) {
		r, pc := setup(b)
		one := func(i int) time.Duration {
			start := time.Now()
			publishNotification(r, "bench", i)
			select {
			case <-pc.ch:
			case <-time.After(10 * time.Second):
				b.Fatal("the hook did not run within 10s")
			}
			return time.Since(start)
		}
		for i := range 1000 { // warm up
			one(i)
		}
		samples := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			samples = append(samples, one(i))
		}
		b.StopTimer()
		b.ReportMetric(float64(median(samples).Nanoseconds()), "median-ns")
		b.ReportMetric(float64(testutil.Percentile(samples, 99).Nanoseconds()), "p99-ns")
	})
	b.Run("sustain-10k-per-s", func(b *testing.B) {
		r, pc := setup(b)
		const rate, period = 10000, time.Second
		var published, ran int64
		for range b.N {
			base := pc.n.Load()
			sent := 0
			start := time.Now()
			tick := time.NewTicker(time.Millisecond)
			for sent < rate {
				<-tick.C
				due := min(rate, int(float64(rate)*float64(time.Since(start))/float64(period)))
				for ; sent < due; sent++ {
					publishNotification(r, "bench", sent)
				}
			}
			tick.Stop()
			// Let the backlog, if any, drain for a moment.
			deadline := time.Now().Add(time.Second)
			for pc.n.Load()-base < int64(sent) && time.Now().Before(deadline) {
				select {
				case <-pc.ch:
				case <-time.After(10 * time.Millisecond):
				}
			}
			published += int64(sent)
			ran += pc.n.Load() - base
		}
		b.ReportMetric(float64(ran)/float64(published), "hooks-run/published")
		b.ReportMetric(float64(published)/float64(b.N), "events/op")
	})
}

// BenchmarkLoopLatency: while 1,000 events a second flow to a trivial
// hook, how long does an Exec of `return 1` take end to end? ns/op is the
// mean; p50-ms and p99-ms (target ≤ 10ms) come from per-Exec samples;
// hooks-run/published checks that the events did flow.
func BenchmarkLoopLatency(b *testing.B) {
	r := newTestRuntime(b, nil)
	r.run(b, `hooked = 0 mcp_on("notification", function() hooked = hooked + 1 end, {server = "bench"})`)
	ctx := context.Background()
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			case <-tick.C:
				publishNotification(r, "bench", n)
				n++
			}
		}
	}()
	exec := func() time.Duration {
		start := time.Now()
		res, err := r.Exec(ctx, `return 1`, "bench")
		d := time.Since(start)
		if err != nil || len(res.Values) != 1 || res.Values[0] != "1" {
			b.Fatal(err, res.Values)
		}
		return d
	}
	for range 100 {
		exec()
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		samples = append(samples, exec())
	}
	b.StopTimer()
	close(stop)
	published := <-done
	// Every event published before the stop reaches the hook; wait for the
	// loop to catch up (bounded), then compare.
	var hooked int
	for range 1000 {
		res, err := r.Exec(ctx, `return hooked`, "bench")
		if err != nil {
			b.Fatal(err)
		}
		hooked, _ = strconv.Atoi(res.Values[0])
		if hooked >= published {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(median(samples).Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(testutil.Percentile(samples, 99).Nanoseconds())/1e6, "p99-ms")
	if published > 0 {
		b.ReportMetric(float64(hooked)/float64(published), "hooks-run/published")
	}
}

// BenchmarkReload1000: reloading a 1000-server config in which one server
// changed. Each op is LoadConfigSource of the file with that server's spec
// changed again (so each op replaces exactly it, including waiting for the
// old one's disposal); ms/op is its mean. The servers' dials never connect.
// The benchmark fails unless exactly that server was touched: the result,
// the added/removed events and the connection attempts per server say so.
func BenchmarkReload1000(b *testing.B) {
	const n, changed = 1000, 500
	dialed := make(chan string, n+1<<16)
	dial := func(ctx context.Context, server string, _ manager.Spec) (mcp.Transport, error) {
		select {
		case dialed <- server:
		default:
		}
		<-ctx.Done() // never connects; removal or Close ends it
		return nil, errors.New("removed")
	}
	r := newTestRuntime(b, dial)
	bus := watchBus(b, r.m.Bus())
	path := "/config/startup.lua"
	ctx := context.Background()
	if _, err := r.LoadConfigSource(ctx, path, manyServers(n, changed, 0)); err != nil {
		b.Fatal(err)
	}
	attempts := map[string]int{}
	for range n {
		attempts[<-dialed]++
	}
	want := fmt.Sprintf("s%04d", changed)
	b.ResetTimer()
	for i := range b.N {
		src := manyServers(n, changed, i+1)
		bus.drain(b)
		from := len(bus.seen)
		res, err := r.LoadConfigSource(ctx, path, src)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if !slices.Equal(res.Replaced, []string{want}) || len(res.Added) != 0 || len(res.Removed) != 0 || res.Unchanged != n-1 {
			b.Fatalf("reload %d: added %v, removed %v, replaced %v, unchanged %d; want only %s replaced",
				i, res.Added, res.Removed, res.Replaced, res.Unchanged, want)
		}
		bus.drain(b)
		if got := lifecycle(bus.seen[from:]); len(got) != 1 || !slices.Equal(got[want], []string{"removed", "added"}) {
			b.Fatalf("reload %d touched %v; want only %s removed then added", i, got, want)
		}
		b.StartTimer()
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	for range b.N {
		select {
		case s := <-dialed:
			attempts[s]++
		case <-time.After(10 * time.Second):
			b.Fatal("a replaced server never dialled")
		}
	}
	for name, got := range attempts {
		if w := map[bool]int{true: 1 + b.N, false: 1}[name == want]; got != w {
			b.Fatalf("%s dialled %d times, want %d", name, got, w)
		}
	}
	if len(attempts) != n {
		b.Fatalf("%d servers dialled, want %d", len(attempts), n)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e6/float64(b.N), "ms/op")
}
