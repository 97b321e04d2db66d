package manager_test

// Benchmarks of per-client sessions. Run them with
//
//	go test -run '^$' -bench 'PerClient' -benchtime 20x ./manager/

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// BenchmarkPerClientFifthSession measures what opening the 5th client
// session of a per-client stdio server costs a client's first call,
// against a fresh server's spawn, handshake, discovery and one call,
// measured in the same run (they alternate). Four clients hold their
// sessions throughout; the fifth is released after each iteration.
//
// Reported: ns/op (mean first call of the 5th client), open-p50-ms,
// fresh-p50-ms, ratio (mean open / mean fresh; the target is ≤ 1.2).
func BenchmarkPerClientFifthSession(b *testing.B) {
	bin := fakemcptest.Build(b)
	m := newManager(b, manager.Options{})
	w := waitEvents(b, m, 4096)
	spec := decode(b, map[string]any{"command": []any{bin}, "session": "per_client", "timeouts": map[string]any{"idle": 0}})
	if err := m.Add("pc", spec); err != nil {
		b.Fatal(err)
	}
	w.until("pc", events.KindConnected)
	ctx := context.Background()
	call := func(server, client string) {
		if _, err := m.Call(ctx, server+".echo", map[string]any{"text": "x"}, manager.CallOptions{Client: client}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 4 {
		call("pc", fmt.Sprintf("holder-%d", i))
	}
	open := func() time.Duration {
		t0 := time.Now()
		call("pc", "fifth")
		took := time.Since(t0)
		m.ReleaseClient("fifth")
		w.until("pc", events.KindSessionClosed)
		return took
	}
	shared := decode(b, map[string]any{"command": []any{bin}, "timeouts": map[string]any{"idle": 0}})
	fresh := func() time.Duration {
		t0 := time.Now()
		if err := m.Add("fresh", shared); err != nil {
			b.Fatal(err)
		}
		call("fresh", "")
		took := time.Since(t0)
		done, err := m.Remove("fresh")
		if err != nil {
			b.Fatal(err)
		}
		<-done
		return took
	}
	open() // warm up
	fresh()
	var opens, freshes []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 1 {
			freshes = append(freshes, fresh())
		}
		opens = append(opens, open())
		if i%2 == 0 {
			freshes = append(freshes, fresh())
		}
	}
	b.StopTimer()
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(mean(opens).Nanoseconds()), "ns/op")
	b.ReportMetric(msOf(testutil.Percentile(opens, 50)), "open-p50-ms")
	b.ReportMetric(msOf(testutil.Percentile(freshes, 50)), "fresh-p50-ms")
	b.ReportMetric(float64(mean(opens))/float64(mean(freshes)), "ratio")
}

// BenchmarkPerClientCalls measures 1000 calls spread over 5 clients of a
// per-client server (each client on its own session, so its own process)
// against the same 1000 calls from the same clients on a shared server
// of the same command, measured in the same run (rounds alternate). It
// also runs the 1000 calls from one client of the per-client server: one
// process, like the shared server, so what is left is what the per-client
// routing costs.
//
// The same comparison with the demo server in process (in-memory
// transports, no process at all) separates what five sessions cost from
// what five processes do.
//
// Reported: ns/op (one round of 1000 calls over 5 client sessions),
// ratio (that / shared, means; the target is ≤ 1.05), ratio-one-session
// (1000 calls of one client / shared), ratio-in-process (5 client
// sessions / shared, both in process).
func BenchmarkPerClientCalls(b *testing.B) {
	bin := fakemcptest.Build(b)
	m := newManager(b, manager.Options{})
	w := waitEvents(b, m, 4096)
	idle := map[string]any{"idle": 0}
	for name, raw := range map[string]map[string]any{
		"pc":     {"command": []any{bin}, "session": "per_client", "timeouts": idle},
		"shared": {"command": []any{bin}, "timeouts": idle},
	} {
		if err := m.Add(name, decode(b, raw)); err != nil {
			b.Fatal(err)
		}
		w.until(name, events.KindConnected)
	}
	d := &testutil.InProcess{Server: demo.NewServer()}
	for name, spec := range map[string]manager.Spec{
		"pcmem":     {Transport: manager.TransportInProcess, Dial: d, Session: manager.SessionPerClient},
		"sharedmem": {Transport: manager.TransportInProcess, Dial: d},
	} {
		if err := m.Add(name, spec); err != nil {
			b.Fatal(err)
		}
		w.until(name, events.KindConnected)
	}
	five := []string{"c0", "c1", "c2", "c3", "c4"}
	ctx := context.Background()
	args := map[string]any{"text": "x"}
	round := func(tool string, clients []string) time.Duration {
		t0 := time.Now()
		for i := range 1000 {
			if _, err := m.Call(ctx, tool, args, manager.CallOptions{Client: clients[i%len(clients)]}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	for _, tool := range []string{"pc.echo", "shared.echo", "pcmem.echo", "sharedmem.echo"} {
		round(tool, five) // warm up, and open the client sessions
	}
	var pcs, ones, shareds, pcmems, sharedmems []time.Duration
	b.ResetTimer()
	for range b.N {
		shareds = append(shareds, round("shared.echo", five))
		pcs = append(pcs, round("pc.echo", five))
		ones = append(ones, round("pc.echo", five[:1]))
		sharedmems = append(sharedmems, round("sharedmem.echo", five))
		pcmems = append(pcmems, round("pcmem.echo", five))
	}
	b.StopTimer()
	b.ReportMetric(float64(mean(pcs).Nanoseconds()), "ns/op")
	b.ReportMetric(float64(mean(pcs))/float64(mean(shareds)), "ratio")
	b.ReportMetric(float64(mean(ones))/float64(mean(shareds)), "ratio-one-session")
	b.ReportMetric(float64(mean(pcmems))/float64(mean(sharedmems)), "ratio-in-process")
}
