// Package hud is the view model of mcpvisor's live status display (the HUD):
// one line per server with its state, tools, latency, retry countdown,
// circuit and last error, built from bus events, and its calls from the
// manager's metrics.
//
// # Model
//
// A [Model] folds [events.Event] values into what it knows of each server;
// [Model.View] turns that into [Row] values at a given instant, so countdowns
// ("retry in 2.4s", "probe in 12s") are computed from the event's time plus
// its delay against the now passed in, and a display only has to call View
// again to tick. [Render] and [Lines] lay rows out as text that fits a width
// exactly (display columns, never wrapping); the terminal drawing lives in
// the command, not here.
//
// The model needs no snapshot of the manager: it starts from a bus's
// [events.Bus.History] as well as from a subscription, and Apply ignores
// events it has already seen (by Seq), so the usual start is
//
//	sub := bus.Subscribe(events.SubscribeOptions{})
//	for _, e := range bus.History(0) {
//		m.Apply(e)
//	}
//	// then Apply every event sub delivers; the overlap is skipped.
//
// History is bounded, so a server whose last lifecycle event has left it
// is not shown until its next event; a server the model first hears of
// through a lifecycle event (connecting, backoff, …) gets a row then. A
// [events.KindLagged] notice only adds to the count of missed events shown
// in the summary: each row is corrected by that server's next event.
// Removed servers disappear.
//
// What a server's tools cost a model in tokens is not in any event (the
// count is too slow to make as events are applied): the model's owner
// counts it and hands it over with [Model.SetTokens]. Nor is what each of
// the gateway's endpoints costs in its mode: the owner reads it from the
// gateway, when one runs, and hands it over with [Model.SetEndpoints];
// [Lines] shows it under the summary. Nor are its calls: the model takes
// no tool_call events (a display woken once per call would cost every
// call), and its owner hands over, before each View, the counters the
// manager keeps ([Model.UpdateMetrics]: requests, failures and the
// latency average), so that a display reads them on its tick.
//
// The model reads each event's typed payload (manager.Connected,
// manager.BackingOff, …), never field names; an event without one (a
// gateway client's arrival and departure excepted, counted by kind) is
// skipped. What the model takes from each kind:
//
//   - added: a new row (transport), state connecting, or disabled when its
//     enabled field is false; removed: the row goes.
//   - connecting: attempt, and whether it is a half-open probe.
//   - connected: tool count; attempt, retry and last error cleared, circuit
//     closed.
//   - disconnected, health_failed: the last error.
//   - backoff: the retry countdown (event time + delay_ms), the attempt the
//     retry will make (attempt + 1), the last error.
//   - failed: attempts and the error; no more retries.
//   - unauthorized: the error, led by what to run when its remedy is a
//     login (mcp_login, and [Model.LoginCommand]'s command if set).
//   - circuit: the breaker state; when it opens, the probe countdown (event
//     time + probe_in_ms) and state open.
//   - idle, closing, disabled: the state of that name.
//   - tools_changed: the tool count moves by len(added) − len(removed).
//
// # Glyphs
//
// Each state has a one-column glyph: ● connected, ◌ connecting, ↻ backoff
// (retrying), ⊘ open (circuit open), ✗ failed, ◦ idle, – disabled, ↓ closing.
//
// # Width
//
// Text is measured in terminal columns: East Asian wide and fullwidth runes
// count two (golang.org/x/text/width), combining marks and format characters
// none. Control characters and invisible format characters in names and
// errors (a server's error text can hold anything: escape sequences, bidi
// overrides, zero-width spaces) are written out as escapes such as `\x1b`
// or `\u202e`, so nothing this package renders can move a terminal's
// cursor or disguise one name as another.
//
// # Concurrency
//
// A Model is not safe for concurrent use: it has one owner goroutine, which
// applies events and asks for views (the command's HUD goroutine, the Lua
// loop). Rows and rendered text are plain values that can be handed to any
// goroutine.
package hud
