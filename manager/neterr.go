package manager

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
)

// reachError is a failure to reach a remote server, said in its own words
// ("connection refused at 127.0.0.1:9") rather than through the layers
// that passed it on (initialize, the SDK's send, the HTTP client, the
// dial). The cause stays in the chain.
type reachError struct {
	msg string
	err error
}

func (e *reachError) Error() string { return e.msg }

func (e *reachError) Unwrap() error { return e.err }

// explainReach returns err as a *reachError when it is a refused
// connection or an unknown host of spec's URL, else err.
func explainReach(err error, spec Spec) error {
	if spec.Transport != TransportHTTP && spec.Transport != TransportSSE {
		return err
	}
	host := spec.URL
	if u, perr := url.Parse(spec.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &reachError{msg: fmt.Sprintf("connection refused at %s (is the server running, and on that port?)", host), err: err}
	case errors.As(err, &dns) && dns.IsNotFound:
		return &reachError{msg: fmt.Sprintf("no such host %q (check the url)", dns.Name), err: err}
	}
	return err
}
