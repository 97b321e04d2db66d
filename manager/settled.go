package manager

import (
	"fmt"
	"strings"
)

// slotsReached is what a server kept waiting by [Options.MaxConnections]
// says in [Status.Waiting], a format taking the cap.
const slotsReached = "max connections (%d) reached"

// slotsPrefix is slotsReached up to its number.
var slotsPrefix = strings.SplitN(fmt.Sprintf(slotsReached, 0), "(", 2)[0]

// Settled reports whether the server has had its first say, so that a
// script started now sees it as it is going to be for a while: it is
// connected (its tools listed), idle, disabled, failed or on its way out;
// an attempt has failed (it backs off, its circuit is open, or it is
// connecting again after the failure); or it waits for a connection slot,
// which may not come free for a long time. A server still making its first
// attempt, or only waiting for its turn to make it under
// [Options.MaxConnecting], has not.
func (st Status) Settled() bool {
	if st.State != StateConnecting {
		return true
	}
	return st.Attempts > 0 || strings.HasPrefix(st.Waiting, slotsPrefix)
}
