package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrCannotStart is in the chain of every [Start] error that comes from
// the command as declared rather than from the moment: the program is not
// there or cannot be run, or the working directory is missing. Starting
// again fails the same way until something is installed or the
// declaration changes.
var ErrCannotStart = errors.New("cannot start")

// StartError says why a command cannot start and how to fix it.
type StartError struct {
	// Problem is what is wrong, e.g. `program "npx" not found on PATH`.
	Problem string
	// Fix is what to do about it.
	Fix string
	// Err is what the system said, if anything.
	Err error
}

func (e *StartError) Error() string { return e.Problem + "; " + e.Fix }

func (e *StartError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCannotStart) hold.
func (e *StartError) Is(target error) bool { return target == ErrCannotStart }

// Startable reports whether command can start in dir the way [Start] would
// start it (the program looked up on the host's PATH, or a relative path
// taken from dir): nil, or a *StartError with the fix. It only looks; the
// answer may change by the time Start runs.
func Startable(command []string, dir string) error {
	if len(command) == 0 || command[0] == "" {
		return &StartError{Problem: "no program", Fix: `name one first, e.g. {"npx", "-y", "pkg"}`}
	}
	if dir != "" {
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return &StartError{Problem: fmt.Sprintf("working directory %q does not exist", dir), Fix: "create it or correct cwd", Err: err}
		case !fi.IsDir():
			return &StartError{Problem: fmt.Sprintf("working directory %q is not a directory", dir), Fix: "correct cwd"}
		}
	}
	prog := command[0]
	err := findProgram(prog, dir)
	if err == nil {
		return nil
	}
	if fields := strings.Fields(prog); len(fields) > 1 && len(command) == 1 {
		// `"command": "npx -y pkg"`, as some clients accept it.
		return &StartError{Problem: fmt.Sprintf("program %q not found: it is the program and its arguments in one string", prog),
			Fix: fmt.Sprintf("give each on its own: command = %s (in JSON: \"command\": %q, \"args\": %s)",
				listOf(fields, "{", "}"), fields[0], listOf(fields[1:], "[", "]")), Err: err}
	}
	if !strings.ContainsRune(prog, filepath.Separator) {
		return &StartError{Problem: fmt.Sprintf("program %q not found on PATH", prog),
			Fix: "install it, or give its full path as the first element of command", Err: err}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &StartError{Problem: fmt.Sprintf("program %q does not exist", prog), Fix: "correct the path, or install it there", Err: err}
	case errors.Is(err, errNotExecutable):
		return &StartError{Problem: fmt.Sprintf("program %q is not an executable file", prog), Fix: "name the program itself (chmod +x if it is a script)", Err: err}
	}
	return &StartError{Problem: fmt.Sprintf("program %q cannot be run: %v", prog, err), Fix: "correct command", Err: err}
}

var errNotExecutable = errors.New("not an executable file")

// findProgram finds prog as exec.Command and the child's chdir would.
func findProgram(prog, dir string) error {
	if !strings.ContainsRune(prog, filepath.Separator) {
		_, err := exec.LookPath(prog)
		if errors.Is(err, exec.ErrDot) {
			return nil // found, in a relative PATH entry; Start says the rest
		}
		return err
	}
	path := prog
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errNotExecutable
	}
	return nil
}

// listOf writes strings as a list between open and close: {"npx", "-y"}.
func listOf(s []string, open, close string) string {
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = fmt.Sprintf("%q", e)
	}
	return open + strings.Join(q, ", ") + close
}
