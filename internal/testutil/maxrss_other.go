//go:build unix && !linux

package testutil

// maxrssUnit is the unit of getrusage's ru_maxrss: bytes on macOS and the
// BSDs.
const maxrssUnit = 1
