package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// discovery is what a login found out about the authorization server
// before the go-sdk's handler ran, to explain its errors.
type discovery struct {
	issuer string
	// resourceMetadata is whether the server's protected resource
	// metadata named the issuer (else it is the server's origin).
	resourceMetadata bool
	// meta is the issuer's metadata; nil if it publishes none, and the
	// go-sdk then assumes the default endpoints under the issuer.
	meta *oauthex.AuthServerMeta
	// metaErr is why the metadata could not be read, if it could not.
	metaErr error
}

// lookUp fills in d's metadata as the go-sdk will look for it.
func (d *discovery) lookUp(ctx context.Context, client *http.Client) {
	d.meta, d.metaErr = auth.GetAuthServerMetadata(ctx, d.issuer, client)
}

// registrationEndpoint is where the go-sdk registers the client.
func (d *discovery) registrationEndpoint() string {
	if d.meta != nil {
		return d.meta.RegistrationEndpoint
	}
	return strings.TrimSuffix(d.issuer, "/") + "/register"
}

// explain is err, from the go-sdk's authorization code handler, as it
// leaves this package: bodies of the authorization server's answers are
// cut out (the token endpoint's and the registration endpoint's may echo
// anything, secrets included), and what discovery found is said when it
// found no metadata, which is where most failed logins start.
//
// The go-sdk reports a registration endpoint's non-JSON refusal only as
// text ("registration failed with status S: BODY"), so that text is what
// is cut; typed errors are used wherever there is one.
func (d *discovery) explain(err error) error {
	if err == nil {
		return nil
	}
	var re *oauth2.RetrieveError
	var cre *oauthex.ClientRegistrationError
	switch {
	case errors.As(err, &re):
		err = fmt.Errorf("the token endpoint refused the authorization code: %s", describe(re))
	case errors.As(err, &cre):
		err = fmt.Errorf("registering the client at %s: %s", d.registrationEndpoint(), describeRegistration(cre))
	default:
		msg := err.Error()
		const failed = "registration failed with status "
		if i := strings.Index(msg, failed); i >= 0 {
			status, _, _ := strings.Cut(msg[i+len(failed):], ":")
			err = fmt.Errorf("registering the client at %s: the authorization server answered %s", d.registrationEndpoint(), status)
		} else if i := strings.Index(msg, "failed to decode"); i >= 0 {
			head, _, _ := strings.Cut(msg[i:], " (") // the body follows in parentheses
			err = fmt.Errorf("registering the client at %s: %s", d.registrationEndpoint(), head)
		}
	}
	if d.meta == nil {
		where := "the server publishes no protected resource metadata, and"
		if d.resourceMetadata {
			where = "the server's protected resource metadata names it, but"
		}
		why := "publishes no authorization server metadata"
		if d.metaErr != nil {
			why = "has authorization server metadata that cannot be used (" + redactURL(d.metaErr).Error() + ")"
		}
		return fmt.Errorf("metadata discovery failed: %s %s %s, so its default endpoints were tried: %w", where, d.issuer, why, err)
	}
	return err
}

// describeRegistration is a registration refusal's code and description.
func describeRegistration(e *oauthex.ClientRegistrationError) string {
	if e.ErrorDescription == "" {
		return e.ErrorCode
	}
	return e.ErrorCode + ": " + e.ErrorDescription
}
