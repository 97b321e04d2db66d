package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

var benchFields = events.Fields{"attempt": 3, "delay_ms": 400, "error": "exit status 3"}

// drain starts a subscriber that reads as fast as it can until the bus
// closes. The returned func waits for it.
func drain(bus *events.Bus) (wait func()) {
	sub := bus.Subscribe(events.SubscribeOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sub.Close()
		for {
			if _, err := sub.Recv(context.Background()); err != nil {
				return
			}
		}
	}()
	return func() { <-done }
}

// stuck subscribes a reader that never reads and fills its queue, so every
// further Publish overflows it.
func stuck(bus *events.Bus) *events.Subscription {
	sub := bus.Subscribe(events.SubscribeOptions{})
	for range 2048 { // > default QueueSize
		bus.Publish(events.KindNotification, "warmup", nil)
	}
	return sub
}

func BenchmarkPublish(b *testing.B) {
	b.Run("no-subscriber", func(b *testing.B) {
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		b.ReportAllocs()
		for b.Loop() {
			bus.Publish(events.KindBackoff, "git", benchFields)
		}
	})
	b.Run("one-fast-subscriber", func(b *testing.B) {
		bus := events.NewBus(events.Options{})
		wait := drain(bus)
		b.ReportAllocs()
		for b.Loop() {
			bus.Publish(events.KindBackoff, "git", benchFields)
		}
		b.StopTimer()
		bus.Close()
		wait()
	})
	b.Run("unwanted-kind", func(b *testing.B) {
		// A subscriber that takes the kind only passively: the publisher
		// asks Wants and builds nothing (compare one-fast-subscriber).
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		passive := bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindBackoff}})
		defer passive.Close()
		b.ReportAllocs()
		for b.Loop() {
			if bus.Wants(events.KindBackoff) {
				bus.Publish(events.KindBackoff, "git", events.Fields{"attempt": 3})
			}
		}
	})
	b.Run("stuck-subscriber", func(b *testing.B) {
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		sub := stuck(bus)
		defer sub.Close()
		b.ReportAllocs()
		for b.Loop() {
			bus.Publish(events.KindBackoff, "git", benchFields)
		}
		b.StopTimer()
		if _, dropped := sub.Stats(); dropped == 0 {
			b.Fatal("stuck subscriber did not overflow")
		}
	})
}

// BenchmarkPublishStuckRatio measures, in the same run, the cost of Publish
// with one draining subscriber (baseline) and with that plus one stuck
// subscriber whose queue is full and dropping. The two buses are timed in
// interleaved chunks, in alternating order, so that frequency scaling and
// noise hit both alike.
// The stuck/baseline metric should stay at or below about 1.2: a stuck
// subscriber costs one bounded ring overwrite, never a wait.
func BenchmarkPublishStuckRatio(b *testing.B) {
	const chunk = 1000

	base := events.NewBus(events.Options{})
	waitBase := drain(base)
	withStuck := events.NewBus(events.Options{})
	waitStuck := drain(withStuck)
	sub := stuck(withStuck)

	var tBase, tStuck time.Duration
	publish := func(bus *events.Bus, n int) time.Duration {
		start := time.Now()
		for range n {
			bus.Publish(events.KindBackoff, "git", benchFields)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		// Alternate which bus goes first: whichever follows a switch pays
		// for the other bus's drainer still finishing on another CPU.
		if (done/chunk)%2 == 0 {
			tBase += publish(base, n)
			tStuck += publish(withStuck, n)
		} else {
			tStuck += publish(withStuck, n)
			tBase += publish(base, n)
		}
	}
	b.StopTimer()

	if _, dropped := sub.Stats(); dropped == 0 {
		b.Fatal("stuck subscriber did not overflow")
	}
	sub.Close()
	base.Close()
	withStuck.Close()
	waitBase()
	waitStuck()

	baseNs := float64(tBase.Nanoseconds()) / float64(b.N)
	stuckNs := float64(tStuck.Nanoseconds()) / float64(b.N)
	b.ReportMetric(baseNs, "baseline-ns/pub")
	b.ReportMetric(stuckNs, "stuck-ns/pub")
	b.ReportMetric(stuckNs/baseNs, "stuck/baseline")
}
