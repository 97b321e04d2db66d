package manager

import "github.com/mcpvisor/mcpvisor/internal/proc"

// Startable reports whether a stdio server's process could be started as
// declared, looking at this host as it is now: the program found on PATH
// (or at its path), the working directory present. The error, an
// [*Error] of code INVALID_CONFIG naming the server, says what is wrong
// and how to fix it; errors.Is(err, ErrCannotStart) holds. Other
// transports are always startable: a URL is only known by dialling it.
//
// A server that fails to start for such a reason is not retried: it goes
// to StateFailed with the same message.
func (s Spec) Startable(server string) error {
	if s.Transport != TransportStdio {
		return nil
	}
	if err := proc.Startable(s.Command, s.Cwd); err != nil {
		return newError(CodeInvalidConfig, server, "spawn", err)
	}
	return nil
}

// ErrCannotStart is in the chain of errors about a program or working
// directory that is not there: see [Spec.Startable].
var ErrCannotStart = proc.ErrCannotStart
