package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// jitterServers is how many servers fail at once in the jitter checks.
const jitterServers = 1000

// jitterReportEnv names a file that TestReconnectJitterSpread writes its
// figures to (JSON, metric name → value); BenchmarkJitterSpread runs the
// test in a child process with it set, because a synctest bubble needs a
// *testing.T.
const jitterReportEnv = "MCPVISOR_JITTER_REPORT"

// attemptAt is one connection attempt as its connecting event announced
// it: when (since the servers were added), its number, and whether it was
// the breaker's half-open probe.
type attemptAt struct {
	at    time.Duration
	n     int
	probe bool
}

// failSchedule is what every server did while each of its dials failed at
// once: its attempts and the times its circuit opened, in order.
type failSchedule struct {
	attempts map[string][]attemptAt
	opened   map[string][]time.Duration
}

// recordFailSchedule adds servers that all fail at the same instant, with
// the spec raw (defaults otherwise) and a seeded jitter source, and records
// their events until horizon of fake time has passed. It must run inside a
// synctest bubble. The servers are closed when t ends.
func recordFailSchedule(t *testing.T, servers int, raw map[string]any, horizon time.Duration, seed uint64) failSchedule {
	t.Helper()
	m := newManager(t, manager.Options{Dial: failingDial(errors.New("connection refused")), Rand: seededRand(seed)})
	sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 16 << 10})
	start := time.Now()

	var mu sync.Mutex
	// mu guards rec.
	rec := failSchedule{attempts: make(map[string][]attemptAt), opened: make(map[string][]time.Duration)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			e, err := sub.Recv(context.Background())
			if err != nil {
				return
			}
			at := e.Time.Sub(start)
			if at >= horizon {
				continue
			}
			mu.Lock()
			switch {
			case e.Kind == events.KindLagged:
				t.Errorf("the recorder lagged: %v events missed", e.Fields["missed"])
			case e.Kind == events.KindConnecting:
				probe, _ := e.Fields["probe"].(bool)
				rec.attempts[e.Server] = append(rec.attempts[e.Server], attemptAt{at: at, n: int(e.Int("attempt")), probe: probe})
			case e.Kind == events.KindCircuit && e.Fields["to"] == "open":
				rec.opened[e.Server] = append(rec.opened[e.Server], at)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-done }) // before the manager closes

	spec := decode(t, raw)
	for i := range servers {
		require.NoError(t, m.Add(fmt.Sprintf("s%04d", i), spec))
	}
	time.Sleep(horizon)
	synctest.Wait() // the recorder has read everything published so far
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, rec.attempts, servers, "every server made attempts")
	return rec
}

// seededRand is an Options.Rand drawing from one seeded generator, safe
// for the supervisors' concurrent use. Which server gets which draw still
// depends on the order the bubble runs them in, so a schedule is
// reproducible as a distribution, not server by server.
func seededRand(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// reconnects lists the start times of every reconnect attempt (attempt ≥ 2,
// probes included) within [from, to), sorted.
func (s failSchedule) reconnects(from, to time.Duration) []time.Duration {
	var out []time.Duration
	for _, as := range s.attempts {
		for _, a := range as {
			if a.n >= 2 && a.at >= from && a.at < to {
				out = append(out, a.at)
			}
		}
	}
	slices.Sort(out)
	return out
}

// peakWindow returns the largest number of the sorted times that fall in
// any window [x, x+w) and the average number per w over the span [from,
// to) they were taken from.
func peakWindow(sorted []time.Duration, from, to, w time.Duration) (peak int, avg float64) {
	j := 0
	for i := range sorted {
		for sorted[i]-sorted[j] >= w {
			j++
		}
		peak = max(peak, i-j+1)
	}
	return peak, float64(len(sorted)) * float64(w) / float64(to-from)
}

// spreadRatio is peakWindow as one figure: the busiest one-second window
// over the average second of [from, to).
func (s failSchedule) spreadRatio(from, to time.Duration) (ratio float64, peak, total int) {
	ts := s.reconnects(from, to)
	if len(ts) == 0 {
		return 0, 0, 0
	}
	peak, avg := peakWindow(ts, from, to, time.Second)
	return float64(peak) / avg, peak, len(ts)
}

// TestReconnectJitterSpread checks how the default backoff jitter (0.25)
// spreads the reconnect attempts of 1000 servers that all fail at the
// same instant (every dial refused at once), in fake time.
//
// With the breaker (the default), each server makes five attempts (at 0
// and after 100, 200, 400 and 800 ms plus up to 25 % jitter), its circuit
// opens at the fifth failure, and from then on one probe comes open_for
// (30 s) plus up to another open_for of jitter after each (re)opening. The
// test asserts that the jitter covers its whole range in each of the four
// backoff waves — no tenth of a wave's jitter range holds more than twice
// its share — that each probe comes within [open_for, 2·open_for) of the
// circuit (re)opening, and that once the probes have spread (from 150 s
// on, after about three probe rounds) no one-second window holds more
// than twice the average second. The
// first second still holds most of the quick retries: that burst is the
// backoff schedule itself (BENCHMARKS.md §7).
//
// Without the breaker the delays reach backoff.max (3 s) and the
// per-server jitter accumulates; from 60 s on no one-second window holds
// more than twice the average second, which is asserted.
func TestReconnectJitterSpread(t *testing.T) {
	report := map[string]float64{}

	t.Run("breaker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const horizon = 300 * time.Second
			s := recordFailSchedule(t, jitterServers, map[string]any{"command": []any{"fake-server"}}, horizon, 1)
			var bins [5][10]int              // [failure n][tenth of the jitter range of the delay after it]
			var first, last [6]time.Duration // per wave 1..5, then the first probe
			for i := range first {
				first[i] = time.Hour
			}
			for name, as := range s.attempts {
				require.GreaterOrEqual(t, len(as), 6, "%s: five attempts and a probe in %s: %v", name, horizon, as)
				for i, a := range as[:5] {
					require.Equal(t, attemptAt{at: a.at, n: i + 1}, a, "%s: attempt %d", name, i+1)
					first[i], last[i] = min(first[i], a.at), max(last[i], a.at)
				}
				require.Zero(t, as[0].at)
				for n := 1; n <= 4; n++ {
					base := 100 * ms << (n - 1)
					gap := as[n].at - as[n-1].at
					require.True(t, gap >= base && gap <= base*5/4, "%s: delay after failure %d is %s, want %s…%s", name, n, gap, base, base*5/4)
					bins[n][min(int(10*float64(gap-base)/float64(base/4)), 9)]++
				}
				open := s.opened[name]
				require.NotEmpty(t, open, name)
				require.Equal(t, as[4].at, open[0], "%s: the circuit opens at the fifth failure", name)
				probes := as[5:]
				for k, p := range probes {
					require.True(t, p.probe, "%s: attempt %d after the circuit opened is a probe", name, p.n)
					opened := open[0]
					if k > 0 {
						opened = probes[k-1].at
					}
					require.True(t, p.at >= opened+30*time.Second && p.at < opened+60*time.Second,
						"%s: probe %d at %s, want within [30s, 60s) of the circuit (re)opening at %s", name, k+1, p.at, opened)
				}
				first[5], last[5] = min(first[5], probes[0].at), max(last[5], probes[0].at)
			}
			for n := 1; n <= 4; n++ {
				peak := slices.Max(bins[n][:])
				require.LessOrEqual(t, peak, 2*jitterServers/10,
					"delays after failure %d: a tenth of the jitter range holds %d of %d: %v", n, peak, jitterServers, bins[n])
				report[fmt.Sprintf("wave%d-tenth-peak/avg", n+1)] = float64(peak) / (jitterServers / 10)
			}
			for i := range 5 {
				report[fmt.Sprintf("wave%d-spread-ms", i+1)] = float64(last[i]-first[i]) / float64(ms)
				t.Logf("attempt %d: %d servers within %s…%s", i+1, jitterServers, first[i], last[i])
			}
			report["probe-spread-ms"] = float64(last[5]-first[5]) / float64(ms)
			t.Logf("first probes: %d servers within %s…%s", jitterServers, first[5], last[5])

			for _, w := range []struct {
				name     string
				from, to time.Duration
			}{{"first-30s", 0, 30 * time.Second}, {"probes-30-90s", 30 * time.Second, 90 * time.Second}, {"probes-90-300s", 90 * time.Second, 300 * time.Second}, {"probes-150-300s", 150 * time.Second, 300 * time.Second}} {
				ratio, peak, total := s.spreadRatio(w.from, w.to)
				report["breaker-"+w.name+"-peak/avg"] = ratio
				t.Logf("%s…%s: %d reconnect attempts, busiest second %d, %.2f× the average second", w.from, w.to, total, peak, ratio)
			}
			ratio, _, _ := s.spreadRatio(150*time.Second, 300*time.Second)
			require.LessOrEqual(t, ratio, 2.0, "once the probes have spread, no second holds more than twice the average")
		})
	})

	t.Run("no-breaker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const horizon = 120 * time.Second
			s := recordFailSchedule(t, jitterServers, map[string]any{"command": []any{"fake-server"}, "breaker": false}, horizon, 2)
			for name, as := range s.attempts {
				for i := 1; i < len(as); i++ {
					base := min(100*ms<<min(i-1, 10), 3*time.Second)
					gap := as[i].at - as[i-1].at
					require.True(t, gap >= base && gap <= base*5/4, "%s: delay after failure %d is %s, want %s…%s", name, i, gap, base, base*5/4)
				}
			}
			for _, w := range []struct {
				name     string
				from, to time.Duration
			}{{"first-30s", 0, 30 * time.Second}, {"30-60s", 30 * time.Second, 60 * time.Second}, {"60-120s", 60 * time.Second, 120 * time.Second}} {
				ratio, peak, total := s.spreadRatio(w.from, w.to)
				report["nobreaker-"+w.name+"-peak/avg"] = ratio
				t.Logf("%s…%s: %d reconnect attempts, busiest second %d, %.2f× the average second", w.from, w.to, total, peak, ratio)
			}
			ratio, _, _ := s.spreadRatio(60*time.Second, 120*time.Second)
			require.LessOrEqual(t, ratio, 2.0, "once the delays are capped, no second holds more than twice the average")
		})
	})

	if path := os.Getenv(jitterReportEnv); path != "" {
		b, err := json.Marshal(report)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
}
