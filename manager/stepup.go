package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// A call refused for want of scopes (a 403 insufficient_scope) asks for a
// login: the server's session ends and it waits, unauthorized, with the
// login as its remedy, for one that asks for the scopes granted and those
// the server named (package oauth keeps both). The call itself waits for
// that login, within its own time, and is sent once more on the session it
// brings; it is never sent more than twice.

// stepUpScopes returns the scopes a call's failure says a login must add,
// or nil when it is no step-up.
func stepUpScopes(err error) []string {
	var login *oauth.LoginRequiredError
	if !errors.As(err, &login) || len(login.Scopes) == 0 {
		return nil
	}
	return login.Scopes
}

// awaitLogin waits until the server is connected on a session other than
// failed (a login, here or in another process, has reconnected it). It
// returns nil then, and otherwise why not: the cause of ctx's end, or the
// state that no login leaves by itself.
func (s *supervisor) awaitLogin(ctx context.Context, failed *mcp.ClientSession) error {
	_, ended, err := s.await(ctx, true, func(snap *snapshot) (bool, error) {
		switch st := snap.status.State; st {
		case StateConnected:
			return snap.session != failed, nil
		case StateRemoved, StateClosing, StateDisabled, StateFailed, StateOpen:
			return true, fmt.Errorf("the server is %s", st)
		}
		return false, nil
	})
	if ended {
		return context.Cause(ctx)
	}
	return err
}

// stepUpError is a call that needed scopes no login brought within its
// time.
type stepUpError struct {
	tool   string
	scopes []string
	login  error // the refusal: a *oauth.LoginRequiredError
	cause  error // why the wait ended: the call's timeout or cancellation
}

func (e *stepUpError) Error() string {
	return fmt.Sprintf("calling %q needs scopes %q, which the login did not grant, and no login granting them came within the call (%v)",
		e.tool, strings.Join(e.scopes, " "), e.cause)
}

func (e *stepUpError) Unwrap() []error { return []error{e.login, e.cause} }
