package manager

// StderrLines is how many of a server's last stderr lines StderrTail
// returns.
const StderrLines = 200

// StderrTail returns the last lines (up to StderrLines) that the latest
// process of stdio server name wrote on stderr, one a line, with the
// server's secrets hidden as everywhere else it is shown. The process
// may have exited: its last words are what explain a crash. It is "" for
// a server that is not a process or has not started one yet, and for one
// that wrote nothing. It fails with CodeServerNotFound for an unknown
// server.
func (m *Manager) StderrTail(name string) (string, error) {
	s, err := m.lookup(name, "stderr")
	if err != nil {
		return "", err
	}
	p := s.stderr.Load()
	if p == nil {
		return "", nil
	}
	return p.StderrTail(StderrLines), nil
}
