package main

import (
	"context"
	"log/slog"
	"maps"
	"strings"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// loginCommand is the shell command that logs in to server, naming the
// config when it is not the default (configHint's "").
func loginCommand(config, server string) string {
	if config == "" {
		return "mcpvisor login " + shellWord(server)
	}
	return "mcpvisor login -c " + shellWord(config) + " " + shellWord(server)
}

// checkCommand is the shell command that says what keeps the config's
// servers from starting.
func checkCommand(config string) string {
	if config == "" {
		return "mcpvisor check"
	}
	return "mcpvisor check -c " + shellWord(config)
}

// cliRemedy says a remedy as a shell user acts on it: the command to run
// (reconnect and enable act on the running instance). It is "" for the
// remedies the command line has no command for, and for none.
func cliRemedy(r manager.Remedy, config string) string {
	switch r.Kind {
	case manager.RemedyEnable:
		return "enable it with `mcpvisor enable " + shellWord(r.Server) + "`"
	case manager.RemedyReconnect:
		return "reconnect it with `mcpvisor reconnect " + shellWord(r.Server) + "`"
	case manager.RemedyLogin:
		return "log in with `" + loginCommand(config, r.Server) + "`"
	case manager.RemedyFixDeclaration:
		return "`" + checkCommand(config) + "` says what keeps it from starting"
	}
	return ""
}

// logPassive is what the log takes only passively: tool calls, whose
// successes it logs at DEBUG, unless it logs DEBUG. A failed call, logged
// at WARN, is published whoever asks.
func logPassive(logger *slog.Logger) []events.Kind {
	if logger.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	return []events.Kind{events.KindToolCall}
}

// logEvents writes every event received on sub to logger, as events.Log
// does, saying an event's remedy (field "remedy", a manager.RemedyKind's
// name) as a shell user acts on it where the command line has a command
// for it. It returns when the bus closes.
func logEvents(sub *events.Subscription, logger *slog.Logger, config string) {
	ctx := context.Background()
	for {
		e, err := sub.Recv(ctx)
		if err != nil { // the bus closed
			return
		}
		if kind := e.Text("remedy"); kind != "" && e.Server != "" {
			if words := cliRemedy(manager.Remedy{Kind: manager.ParseRemedyKind(kind), Server: e.Server}, config); words != "" {
				e.Fields = maps.Clone(e.Fields) // shared with every subscriber
				e.Fields["remedy"] = words
			}
		}
		events.LogEvent(ctx, logger, e)
	}
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
