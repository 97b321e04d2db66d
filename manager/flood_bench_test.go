package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// BenchmarkCallUnderNotificationFlood measures the p99 of one server's
// calls while another server floods notifications as fast as it can and a
// consumer (a Lua hook, the HUD) reads every event and every notice,
// against the same calls with the flooding server quiet, in the same run.
// Reported: flood-p99-ms, quiet-p99-ms and p99-ratio.
//
//	go test -run '^$' -bench CallUnderNotificationFlood -benchtime 2000x ./manager/
func BenchmarkCallUnderNotificationFlood(b *testing.B) {
	flooding := make(chan bool, 1)
	var sessions sync.Map // *mcp.ServerSession of the flooding server
	p := map[string]*peers{
		"demo": {newServer: demo.NewServer},
		"flood": {newServer: func() *mcp.Server {
			return mcp.NewServer(&mcp.Implementation{Name: "flood"}, &mcp.ServerOptions{
				InitializedHandler: func(_ context.Context, r *mcp.InitializedRequest) { sessions.Store(r.Session, true) },
			})
		}},
	}
	dial := func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
		return p[name].dial(ctx, name, spec)
	}
	m := newManager(b, manager.Options{Dial: dial})
	sub := m.Bus().Subscribe(events.SubscribeOptions{})
	notes := m.Notices().Listen(notify.ListenOptions{})
	subCtx, stopSub := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { // a consumer that reads every event and every notice
		for {
			select {
			case <-subCtx.Done():
				return
			case <-sub.Ready():
				for {
					if _, ok, _ := sub.TryRecv(); !ok {
						break
					}
				}
			case <-notes.Ready():
				for {
					if _, ok, _ := notes.TryNext(); !ok {
						break
					}
				}
			}
		}
	})
	defer func() { stopSub(); wg.Wait(); sub.Close(); notes.Close() }()
	for name := range p {
		if err := m.Add(name, fakeSpec(b, nil)); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Wait(context.Background(), name, manager.StateConnected); err != nil {
			b.Fatal(err)
		}
	}
	floodCtx, stopFlood := context.WithCancel(context.Background())
	wg.Go(func() {
		for {
			select {
			case <-floodCtx.Done():
				return
			case on := <-flooding:
				for on {
					sessions.Range(func(k, _ any) bool {
						_ = k.(*mcp.ServerSession).NotifyProgress(floodCtx, &mcp.ProgressNotificationParams{ProgressToken: "x", Progress: 1})
						return true
					})
					select {
					case on = <-flooding:
					case <-floodCtx.Done():
						return
					default:
					}
				}
			}
		}
	})
	defer stopFlood()
	measure := func(n int) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			start := time.Now()
			if _, err := m.Call(context.Background(), "demo.echo", map[string]any{"text": "x"}, manager.CallOptions{}); err != nil {
				b.Fatal(err)
			}
			ds[i] = time.Since(start)
		}
		return ds
	}
	b.ResetTimer()
	quiet := measure(b.N)
	flooding <- true
	time.Sleep(100 * time.Millisecond) // the flood is under way
	flood := measure(b.N)
	flooding <- false
	b.StopTimer()
	q99, f99 := testutil.Percentile(quiet, 99), testutil.Percentile(flood, 99)
	b.ReportMetric(float64(f99.Microseconds())/1e3, "flood-p99-ms")
	b.ReportMetric(float64(q99.Microseconds())/1e3, "quiet-p99-ms")
	b.ReportMetric(float64(f99)/float64(q99), "p99-ratio")
}
