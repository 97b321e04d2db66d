package manager_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// Bad configuration. Each case checks invariant E on the error:
// INVALID_CONFIG, naming the server and the operation, and every problem at
// once, each naming its field.

// requireProblems asserts that err lists exactly want, each as a
// "field: message" fragment, in one INVALID_CONFIG error for server.
func requireProblems(t *testing.T, err error, server, op string, want []string) {
	t.Helper()
	requireFault(t, err, manager.ErrInvalidConfig, server, op)
	msg := err.Error()
	for _, w := range want {
		require.Contains(t, msg, w)
	}
	require.Contains(t, msg, fmt.Sprintf("server %q: %s: %d problems: ", server, op, len(want)),
		"every problem listed at once, none twice: %s", msg)
}

// Negative, zero and absurd values are refused, all at once, each naming
// its field; none reaches the go-sdk (where a negative MaxLineLength
// disables the frame cap).
func TestConfigAbsurdValues(t *testing.T) {
	tests := []struct {
		name string
		raw  map[string]any
		want []string
	}{
		{
			name: "negative, zero, unitless and overflowing durations",
			raw: map[string]any{
				"command": []any{"srv"},
				"timeouts": map[string]any{
					"connect": "-1s",
					"request": 0,
				},
				"backoff": map[string]any{
					"initial":    "10",
					"max":        "9999999h",
					"multiplier": 0.5,
					"jitter":     1.5,
				},
				"max_retries":     -2,
				"max_frame_bytes": -1,
			},
			want: []string{
				`timeouts.connect: must be > 0, got "-1s"`,
				`timeouts.request: must be > 0, got 0`,
				`backoff.initial: "10" has no unit; write e.g. "10s" or "10ms", or a number of seconds`,
				`backoff.max: "9999999h" is out of range`,
				`backoff.multiplier: must be within 1..100, got 0.5`,
				`backoff.jitter: must be within 0..1, got 1.5`,
				`max_retries: must be within 0..1000000 (leave it out to retry forever), got -2`,
				`max_frame_bytes: must be within 1024..1073741824, got -1`,
			},
		},
		{
			name: "in range one by one, absurd together or too large",
			raw: map[string]any{
				"url":      "http://127.0.0.1:1/mcp",
				"timeouts": map[string]any{"connect": "999999h", "request": 1e7},
				"backoff":  map[string]any{"initial": "2s", "max": "1s"},
			},
			want: []string{
				`timeouts.connect: must be at most 1h0m0s, got 999999h0m0s`,
				`timeouts.request: 1e+07 seconds is out of range`,
				`backoff.max: must be at least backoff.initial (2s), got 1s`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.DecodeSpec("x", tt.raw, config.DecodeOptions{})
			requireProblems(t, err, "x", "config", tt.want)
		})
	}
}

// A Spec built by hand bypasses DecodeSpec; Add validates it again, so
// negatives never reach the SDK that way either, and nothing is started.
func TestConfigHandBuiltSpec(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := manager.Spec{
		Transport:     manager.TransportStdio,
		Command:       []string{f.bin},
		Timeouts:      manager.Timeouts{Connect: -time.Second, Request: 2 * time.Hour * 24 * 365},
		Backoff:       manager.Backoff{Initial: time.Second, Max: time.Millisecond, Multiplier: 0.5, Jitter: 2},
		MaxRetries:    new(-2),
		MaxFrameBytes: -1,
	}
	err := f.m.Add("x", spec)
	requireProblems(t, err, "x", "config", []string{
		`timeouts.connect: must be > 0, got -1s`,
		`timeouts.request: must be at most 24h0m0s, got 17520h0m0s`,
		`backoff.max: must be at least backoff.initial (1s), got 1ms`,
		`backoff.multiplier: must be within 1..100, got 0.5`,
		`backoff.jitter: must be within 0..1, got 2`,
		`max_retries: must be within 0..1000000 (leave it out to retry forever), got -2`,
		`max_frame_bytes: must be within 1024..1073741824, got -1`,
	})
	require.Empty(t, f.m.Names(), "nothing was declared")
}
