package manager

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// A server's refusal for want of scopes that comes back after the caller
// gave up still names the scopes: the caller learns what a login must grant
// rather than only that it cancelled.
func TestCallFailureKeepsAStepUpAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	refusal := &oauth.LoginRequiredError{Server: "saas", Reason: "the server wants more scopes", Scopes: []string{"tools", "admin"}}
	err := (&supervisor{}).callFailure(ctx, 1, refusal, nil)
	if got := stepUpScopes(err); len(got) != 2 {
		t.Fatalf("callFailure after a cancel = %v; want the refusal naming scopes tools and admin", err)
	}
	if !errors.Is(err, refusal) {
		t.Fatalf("callFailure lost the refusal: %v", err)
	}
}

// What a server sent before a call's answer is waited for while the
// session keeps handling it, however slowly; a stall of noticesBeforeWait
// with nothing handled ends the wait, and the missing ones are not waited
// for again.
func TestNoticesAwaitBoundsAStallNotTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tally := &noticeTally{more: make(chan struct{})}
		go func() {
			for range 3 {
				time.Sleep(noticesBeforeWait * 9 / 10)
				tally.took()
			}
		}()
		start := time.Now()
		tally.await(t.Context(), 3)
		if got, want := time.Since(start), 3*noticesBeforeWait*9/10; got != want {
			t.Fatalf("await returned after %v; want %v, when the third notification was handled", got, want)
		}

		start = time.Now()
		tally.await(t.Context(), 5)
		if got := time.Since(start); got != noticesBeforeWait {
			t.Fatalf("await with nothing handled returned after %v; want %v", got, noticesBeforeWait)
		}
		start = time.Now()
		tally.await(t.Context(), 5)
		if got := time.Since(start); got != 0 {
			t.Fatalf("the notifications given up on were waited for again (%v)", got)
		}
	})
}
