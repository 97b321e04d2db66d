package manager

// Reconnect resets a server's backoff schedule and circuit breaker and
// makes it try now: a connected server is reconnected, one waiting in
// backoff, with its circuit open, failed or idle attempts at once. It
// returns without waiting; watch the events or use [Manager.Wait].
func (m *Manager) Reconnect(name string) error {
	s, err := m.lookup(name, "reconnect")
	if err != nil {
		return err
	}
	if s.disabled.Load() {
		return errorf(CodeServerDisabled, s.name, "reconnect", "server is disabled; mcp_enable(%q) to connect it", s.name)
	}
	s.reconnect.Store(true)
	s.wake()
	return nil
}

// Enable connects a disabled server (R-LIFE-4). Enabling an enabled server
// does nothing.
func (m *Manager) Enable(name string) error {
	s, err := m.lookup(name, "enable")
	if err != nil {
		return err
	}
	if s.disabled.Swap(false) {
		s.wake()
	}
	return nil
}

// Disable closes a server's session, draining its requests in flight, and
// keeps it disconnected (state disabled) until [Manager.Enable]. Its tools
// stay listed, unavailable.
func (m *Manager) Disable(name string) error {
	s, err := m.lookup(name, "disable")
	if err != nil {
		return err
	}
	if !s.disabled.Swap(true) {
		s.wake()
	}
	return nil
}
