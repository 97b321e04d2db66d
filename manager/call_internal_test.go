package manager

import (
	"context"
	"errors"
	"testing"

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
