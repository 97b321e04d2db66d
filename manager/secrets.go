package manager

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/redact"
)

// A server's Spec.Secrets are hidden in every text derived from the
// server before it leaves the supervisor: a stdio server's stderr and
// stdout at the source (internal/proc), and here its errors (the ones
// callers get, the last error in its status, spans and warnings) and the
// text fields of its events.

// hide returns err with the server's secrets hidden from its text, and
// err itself when there is nothing to hide. The chain is kept for
// errors.Is and errors.As: a *Error stays a *Error with its code, and a
// server's JSON-RPC error found in it has its message and data hidden too.
func (s *supervisor) hide(err error) error {
	if err == nil || s.secrets == nil {
		return err
	}
	text := err.Error()
	if s.secrets.String(text) == text {
		return err
	}
	if e, ok := err.(*Error); ok && e.Err != nil {
		cp := *e
		cp.Err = hiddenError{err: e.Err, secrets: s.secrets}
		return &cp
	}
	return hiddenError{err: err, secrets: s.secrets}
}

// hiddenError is an error whose text has secrets hidden.
type hiddenError struct {
	err     error
	secrets *redact.Secrets
}

func (e hiddenError) Error() string { return e.secrets.String(e.err.Error()) }
func (e hiddenError) Unwrap() error { return e.err }

// As gives a server's JSON-RPC error with its message and data hidden
// (the gateway forwards both to its clients).
func (e hiddenError) As(target any) bool {
	t, ok := target.(**jsonrpc.Error)
	if !ok {
		return false
	}
	var je *jsonrpc.Error
	if !errors.As(e.err, &je) {
		return false
	}
	cp := *je
	cp.Message = e.secrets.String(je.Message)
	if len(je.Data) > 0 {
		data := e.secrets.String(string(je.Data))
		if json.Valid([]byte(data)) {
			cp.Data = json.RawMessage(data)
		} else {
			cp.Data = nil // a value outside a string: no data rather than broken
		}
	}
	*t = &cp
	return true
}

// hidePayload returns p with the server's secrets hidden in its text
// fields (an event's error, reason, …), p itself when there are none.
func (s *supervisor) hidePayload(p events.Payload) events.Payload {
	if s.secrets == nil {
		return p
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Struct {
		return p
	}
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	for i := range cp.NumField() {
		if f := cp.Field(i); f.Kind() == reflect.String && f.CanSet() {
			f.SetString(s.secrets.String(f.String()))
		}
	}
	if hidden, ok := cp.Interface().(events.Payload); ok {
		return hidden
	}
	return p
}
