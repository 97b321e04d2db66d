package suggest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClosest(t *testing.T) {
	known := []string{"command", "url", "timeouts", "max_retries"}
	for _, tt := range []struct{ in, want string }{
		{"comand", "command"},    // deletion
		{"URL", "url"},           // case only
		{"timeuots", "timeouts"}, // adjacent swap costs one
		{"max_retry", "max_retries"},
		{"xyz", ""}, // nothing plausible
		{"u", ""},   // a one-letter name matches nothing
	} {
		require.Equal(t, tt.want, Closest(tt.in, known), "Closest(%q)", tt.in)
	}
}

func TestCloseMatches(t *testing.T) {
	tools := []string{"git.status", "git.stash", "fs.read_file", "fs.write_file"}
	require.Equal(t, []string{"fs.read_file", "fs.write_file"}, CloseMatches("file", tools), "containment")
	require.Equal(t, []string{"git.status", "git.stash"}, CloseMatches("git.statsu", tools), "within a third of the length")
	require.Empty(t, CloseMatches("docker", tools))
}
