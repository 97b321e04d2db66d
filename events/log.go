package events

import (
	"context"
	"log/slog"
	"sort"
)

// LevelOf is the slog level an event is logged at: lifecycle milestones at
// INFO, failures that will be retried and lost events at WARN, terminal
// failures and broken configuration at ERROR, chatter at DEBUG.
func LevelOf(k Kind) slog.Level {
	switch k {
	case KindAdded, KindConnected, KindRemoved, KindConfigApplied,
		KindSessionReinitialized, KindToolsChanged, KindResourcesChanged,
		KindPromptsChanged, KindCircuit, KindIdle, KindConnecting,
		KindClosing, KindDisabled, KindHealthUnsupported,
		KindClientConnected, KindClientDisconnected,
		KindElicitation, KindSampling, KindRoots, KindSessionOpened, KindSessionClosed:
		return slog.LevelInfo
	case KindBackoff, KindDisconnected, KindHealthFailed, KindHookError, KindLagged,
		KindNameCollision, KindRefused, KindNotificationsDropped:
		return slog.LevelWarn
	case KindFailed, KindConfigError, KindUnauthorized:
		return slog.LevelError
	default:
		return slog.LevelDebug
	}
}

var logMessages = map[Kind]string{
	KindAdded:                "server added",
	KindRemoved:              "server removed",
	KindConnecting:           "connect attempt",
	KindConnected:            "server connected",
	KindDisconnected:         "server disconnected",
	KindBackoff:              "backing off, will retry",
	KindFailed:               "server failed, giving up",
	KindLagged:               "log subscriber fell behind, events missed",
	KindConfigApplied:        "config applied",
	KindConfigError:          "config not applied",
	KindHookError:            "Lua hook failed",
	KindToolsChanged:         "tools changed",
	KindNotification:         "server notification",
	KindClosing:              "server closing",
	KindDisabled:             "server disabled",
	KindToolCall:             "tool call finished",
	KindIdle:                 "server idle, no session until the next call",
	KindCircuit:              "circuit breaker changed",
	KindHealthFailed:         "health check failed",
	KindHealthUnsupported:    "health check unsupported, using passive liveness",
	KindClientConnected:      "client connected",
	KindClientDisconnected:   "client disconnected",
	KindNameCollision:        "names collide after sanitizing; both kept under distinct names",
	KindRefused:              "server listed an item with an unusable name; it is left out",
	KindNotificationsDropped: "server sent notifications faster than they are published; some were dropped",
	KindElicitation:          "server asked for user input (elicitation)",
	KindSampling:             "server asked for a model completion (sampling)",
	KindRoots:                "server asked for its roots",
	KindSessionOpened:        "client session opened",
	KindSessionClosed:        "client session closed",
}

// levelOfEvent refines LevelOf with the event's fields: a failed tool call
// is logged at WARN, one its caller cancelled at INFO (nothing went wrong),
// a successful one at DEBUG.
func levelOfEvent(e Event) slog.Level {
	if e.Kind == KindToolCall && e.Text("error") != "" {
		if cancelled, _ := e.Fields["cancelled"].(bool); cancelled {
			return slog.LevelInfo
		}
		return slog.LevelWarn
	}
	return LevelOf(e.Kind)
}

// Log writes every event received on sub to logger until the bus closes or
// ctx ends. It returns nil when the bus closed and ctx's error otherwise.
func Log(ctx context.Context, sub *Subscription, logger *slog.Logger) error {
	for {
		e, err := sub.Recv(ctx)
		if err == ErrClosed {
			return nil
		}
		if err != nil {
			return err
		}
		LogEvent(ctx, logger, e)
	}
}

// LogEvent writes one event as a structured log record.
func LogEvent(ctx context.Context, logger *slog.Logger, e Event) {
	level := levelOfEvent(e)
	if !logger.Enabled(ctx, level) {
		return
	}
	msg, ok := logMessages[e.Kind]
	switch {
	case e.Kind == KindToolCall && level == slog.LevelWarn:
		msg = "tool call failed"
	case e.Kind == KindToolCall && level == slog.LevelInfo:
		msg = "tool call cancelled"
	}
	if !ok {
		msg = string(e.Kind)
	}
	attrs := make([]slog.Attr, 0, len(e.Fields)+3)
	if e.Seq != 0 {
		attrs = append(attrs, slog.Uint64("seq", e.Seq))
	}
	if e.Server != "" {
		attrs = append(attrs, slog.String("server", e.Server))
	}
	attrs = append(attrs, slog.String("kind", string(e.Kind)))
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, e.Fields[k]))
	}
	logger.LogAttrs(ctx, level, msg, attrs...)
}
