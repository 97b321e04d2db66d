package testutil

// maxrssUnit is the unit of getrusage's ru_maxrss: kilobytes on Linux.
const maxrssUnit = 1024
