package events_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

// callPayload stands for a frequent kind's typed payload.
type callPayload struct{ tool string }

func (callPayload) Kind() events.Kind { return events.KindToolCall }

func (p callPayload) Fields() events.Fields { return events.Fields{"tool": p.tool} }

// publishCall is how a publisher of a frequent kind publishes: only when
// someone asks for it.
func publishCall(bus *events.Bus) {
	if bus.Wants(events.KindToolCall) {
		bus.Emit("git", "", callPayload{"status"})
	}
}

func TestUnwantedKindCostsNothing(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	require.False(t, bus.Wants(events.KindToolCall), "no subscriber at all")

	// Subscribers that take tool calls only passively (the log, the HUD):
	// a call's event is neither built nor published, and nobody is woken.
	log := bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	defer log.Close()
	hud := bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	defer hud.Close()
	require.False(t, bus.Wants(events.KindToolCall))
	require.True(t, bus.Wants(events.KindConnected), "they ask for every other kind")

	allocs := testing.AllocsPerRun(1000, func() { publishCall(bus) })
	require.Zero(t, allocs, "publishing a kind nobody asks for allocates")
	require.Zero(t, bus.Published())
	select {
	case <-log.Ready():
		t.Fatal("a passive subscriber was woken by an unwanted kind")
	default:
	}

	// A subscriber that asks for it (a Lua hook on tool_call) gets it, and
	// so do the passive ones, as before.
	hook := bus.Subscribe(events.SubscribeOptions{})
	require.True(t, bus.Wants(events.KindToolCall))
	publishCall(bus)
	for _, sub := range []*events.Subscription{hook, log, hud} {
		got := recvAll(t, sub)
		require.Len(t, got, 1)
		require.Equal(t, events.KindToolCall, got[0].Kind)
		require.Equal(t, "status", got[0].Text("tool"))
	}

	// Once it goes, the kind is unwanted again.
	hook.Close()
	require.False(t, bus.Wants(events.KindToolCall))
}

func TestSetPassiveChangesWhatIsWanted(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	defer sub.Close()
	require.False(t, bus.Wants(events.KindToolCall))

	sub.SetPassive() // a hook on tool_call was registered
	require.True(t, bus.Wants(events.KindToolCall))
	publishCall(bus)
	require.Len(t, recvAll(t, sub), 1)

	sub.SetPassive(events.KindToolCall) // and removed
	require.False(t, bus.Wants(events.KindToolCall))

	sub.Close()
	sub.SetPassive() // on a closed subscription: nothing to ask for
	require.False(t, bus.Wants(events.KindToolCall))
}

func TestClosedBusWantsNothing(t *testing.T) {
	bus := events.NewBus(events.Options{})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	require.True(t, bus.Wants(events.KindToolCall))
	bus.Close()
	require.False(t, bus.Wants(events.KindToolCall))
}
