package gateway_test

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// runStdioRelayProcess is the least a process between a stdio client and
// a stdio server can do: it starts this binary as a bench-demo server
// (with this process's environment) and copies its own stdin to the
// server's and the server's stdout to its own, bytes as they come, until
// its stdin ends. It is the floor of `mcpvisor serve`'s stdio hop: the
// same second process, the same pipes and Go runtime, and nothing read.
func runStdioRelayProcess() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serverEnv+"=bench-demo")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(os.Stdout, stdout)
	}()
	_, err = io.Copy(stdin, os.Stdin)
	_ = stdin.Close() // the demo server exits at EOF, closing its stdout
	<-done
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	return err
}

// stdioRelayCmd is the stdio relay in front of a bench-demo server held
// to version, as a command to start.
func stdioRelayCmd(b *testing.B, version string) *exec.Cmd {
	cmd := benchServerCmd(b, version)
	cmd.Env = append(cmd.Env, serverEnv+"=bench-stdio-relay")
	return cmd
}
