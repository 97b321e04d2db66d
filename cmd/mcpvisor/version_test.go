//go:build linux

package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// --version prints one line naming the program, exits 0, and says so when
// the build recorded no commit (tests build with -buildvcs as the
// environment has it).
func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		o := runBinary(t, invocation{args: []string{arg}})
		require.Equal(t, 0, o.code, "exit code of %s", arg)
		require.Regexp(t, `^mcpvisor \S+ \(.+\) go\d`, o.stdout)
		require.Empty(t, o.stderr)
	}
}

func TestVersionLine(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"},
		{Key: "vcs.time", Value: "2026-11-24T21:05:34Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"stamped", stamped, true, "mcpvisor v0.3.0 (commit 1a2b3c4d5e6f, 2026-11-24T21:05:34Z, modified) go1.26.8"},
		{"go run", bare, true, "mcpvisor (devel) (no VCS revision recorded) go1.26.8"},
		{"no build info", nil, false, "mcpvisor (no build information)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, versionLine(tt.info, tt.ok))
		})
	}
}
