package notify

import (
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// A Notice is one thing a server session said, or a [Lost] report. The
// types of this package are the only notices.
type Notice interface {
	// From says whose session said it, and when it was heard.
	From() Origin
	// Kind is the kind of event Lua hooks see it as.
	Kind() events.Kind
	// Fields renders the notice for Lua hooks and the log, as the server
	// sent it: method and params (and client, for a client's own session).
	Fields() events.Fields
	// waits reports whether a lossless listener's publisher waits for
	// room for it rather than counting it lost.
	waits() bool
}

// Origin is the session a notice came from.
type Origin struct {
	// Server is the server's name as declared.
	Server string
	// Client is the client whose own session of a per-client server said
	// it, or "" for the server's own session.
	Client string
	// Time is when the notice was heard.
	Time time.Time
}

// From returns o.
func (o Origin) From() Origin { return o }

// fields renders method and params as the notification event of o.
func (o Origin) fields(method string, params any) events.Fields {
	f := events.Fields{"method": method, "params": params}
	if o.Client != "" {
		f["client"] = o.Client
	}
	return f
}

// ResourceUpdated is a server's notifications/resources/updated: a
// resource a caller subscribed to changed.
type ResourceUpdated struct {
	Origin
	URI string
	// Meta is the notification's _meta, nil if it had none.
	Meta map[string]any
}

// Kind is notification.
func (ResourceUpdated) Kind() events.Kind { return events.KindNotification }

// Fields renders params {uri} (and _meta when the server sent one).
func (n ResourceUpdated) Fields() events.Fields {
	params := map[string]any{"uri": n.URI}
	if n.Meta != nil {
		params["_meta"] = n.Meta
	}
	return n.fields("notifications/resources/updated", params)
}

func (ResourceUpdated) waits() bool { return true }

// The lists a [ListChanged] names.
const (
	Tools     = "tools"
	Resources = "resources"
	Prompts   = "prompts"
)

// ListChanged is a server's notifications/tools/list_changed (or
// resources, prompts). The manager itself lists that kind again and
// publishes what changed on the events bus (tools_changed, …), where a
// subscriber that fell behind is told so and lists everything again; the
// notice is for observers and, like a log message, never waits.
type ListChanged struct {
	Origin
	// List is [Tools], [Resources] or [Prompts].
	List string
}

// Kind is notification.
func (ListChanged) Kind() events.Kind { return events.KindNotification }

// Fields renders the method and no params.
func (n ListChanged) Fields() events.Fields {
	return n.fields("notifications/"+n.List+"/list_changed", nil)
}

func (ListChanged) waits() bool { return false }

// LogMessage is a server's notifications/message.
type LogMessage struct {
	Origin
	Level  string // as the protocol names levels: debug, info, …, emergency
	Logger string // "" if the server named none
	Data   any
}

// Kind is notification.
func (LogMessage) Kind() events.Kind { return events.KindNotification }

// Fields renders params {level, logger, data}.
func (n LogMessage) Fields() events.Fields {
	return n.fields("notifications/message", map[string]any{"level": n.Level, "logger": n.Logger, "data": n.Data})
}

func (LogMessage) waits() bool { return false }

// Progress is a server's notifications/progress, as seen by observers; the
// call it belongs to gets it on its own path, unlimited.
type Progress struct {
	Origin
	Progress float64
	Total    float64
	Message  string
}

// Kind is notification.
func (Progress) Kind() events.Kind { return events.KindNotification }

// Fields renders params {progress, total, message}.
func (n Progress) Fields() events.Fields {
	return n.fields("notifications/progress", map[string]any{"progress": n.Progress, "total": n.Total, "message": n.Message})
}

func (Progress) waits() bool { return false }

// Lost reports what one listener's queue could not take of one session's
// notices, at the place in the order where they went missing. A consumer
// makes up for it: resource updates by treating every resource it
// subscribed to on that server as updated.
type Lost struct {
	Origin
	ResourceUpdates int
	ListChanges     int
	LogMessages     int
	Progress        int
}

// Total is how many notices were lost.
func (n Lost) Total() int { return n.ResourceUpdates + n.ListChanges + n.LogMessages + n.Progress }

// Kind is lagged, as for a subscriber of the bus that fell behind.
func (Lost) Kind() events.Kind { return events.KindLagged }

// Fields renders missed (the total, as the bus's lagged events do) and
// the count of each kind lost.
func (n Lost) Fields() events.Fields {
	f := events.Fields{"missed": uint64(n.Total()), "resource_updates": n.ResourceUpdates,
		"list_changes": n.ListChanges, "log_messages": n.LogMessages, "progress": n.Progress}
	if n.Client != "" {
		f["client"] = n.Client
	}
	return f
}

func (Lost) waits() bool { return false }

// count adds n to what l counts.
func (l *Lost) count(n Notice) {
	switch n.(type) {
	case ResourceUpdated:
		l.ResourceUpdates++
	case ListChanged:
		l.ListChanges++
	case LogMessage:
		l.LogMessages++
	case Progress:
		l.Progress++
	case Lost:
		// Never queued by a publisher.
	}
}
