package luaapi

import lua "github.com/yuin/gopher-lua"

// SetArg gives scripts the global table arg, laid out as the lua command
// lays it out: argv[script] (the script's name) at index 0, the words after
// it at 1, 2, …, and the words before it (the program and its options) at
// -1, -2, … counting back from the script. It waits until the loop has set
// it, so a chunk run next sees it.
func (r *Runtime) SetArg(argv []string, script int) error {
	done := make(chan struct{})
	if !r.post(func() {
		t := r.state.NewTable()
		for i, a := range argv {
			t.RawSetInt(i-script, lua.LString(a))
		}
		r.state.SetGlobal("arg", t)
		close(done)
	}) {
		return errClosed
	}
	select {
	case <-done:
		return nil
	case <-r.done:
		return errClosed
	}
}
