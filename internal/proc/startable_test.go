package proc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Startable names what keeps a command from starting and the fix, and
// Start reports the same, so that the reason is never "fork/exec …: no
// such file or directory" blaming the wrong thing.
func TestStartable(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(script, []byte("hi"), 0o644))
	tests := []struct {
		name    string
		command []string
		dir     string
		want    string // "" means it can start
	}{
		{"on PATH", []string{"sh", "-c", "true"}, "", ""},
		{"relative to cwd", []string{"./notes.txt"}, dir, `program "./notes.txt" is not an executable file; name the program itself (chmod +x if it is a script)`},
		{"not on PATH", []string{"no-such-binary-zz"}, "", `program "no-such-binary-zz" not found on PATH; install it, or give its full path as the first element of command`},
		{"missing path", []string{"/nonexistent/prog", "-x"}, "", `program "/nonexistent/prog" does not exist; correct the path, or install it there`},
		{"one string", []string{"npx -y foo"}, "", `program "npx -y foo" not found: it is the program and its arguments in one string; give each on its own: command = {"npx", "-y", "foo"} (in JSON: "command": "npx", "args": ["-y", "foo"])`},
		{"missing cwd", []string{"sh"}, "/nonexistent/dir", `working directory "/nonexistent/dir" does not exist; create it or correct cwd`},
		{"cwd is a file", []string{"sh"}, script, `working directory "` + script + `" is not a directory; correct cwd`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Startable(tt.command, tt.dir)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			require.ErrorIs(t, err, ErrCannotStart)
			_, serr := Start(Config{Command: tt.command, Dir: tt.dir})
			require.EqualError(t, serr, tt.want, "Start says the same")
			require.True(t, errors.Is(serr, ErrCannotStart))
		})
	}
}
