package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// scanFast reads body, one valid JSON value, into req as
// json.Unmarshal(body, &req) would, and reports whether it could: it
// takes only the plain shape every client sends (an object whose members
// the fast path reads are written plainly: keys without escapes, each
// once; strings without escapes; params an object or null) and leaves
// anything else to json.Unmarshal, whose result is then the one that
// counts. It is the fast path's reading of every call, without
// reflection. foreign is set when a key is one the fast path reads in
// another case (or one that may fold to it): json.Unmarshal would take
// it for that member, the go-sdk does not, so the message is not the
// fast path's.
func scanFast(body []byte, req *fastRequest) (ok, foreign bool) {
	seen := 0
	ok = rawrpc.Members(body, func(key, v []byte) bool {
		switch k := topKey(key); k {
		case -1:
			foreign = true
			return false
		case 0:
			return true // a member the fast path does not read
		default:
			if seen&(1<<k) != 0 {
				return false // twice: json.Unmarshal keeps both, merged
			}
			seen |= 1 << k
		}
		switch string(key) {
		case "jsonrpc":
			return plainString(v, &req.JSONRPC)
		case "id":
			req.ID = clone(v)
		case "method":
			return plainString(v, &req.Method)
		case "params":
			return scanParams(v, req, &foreign)
		case "result":
			req.Result = clone(v)
		case "error":
			req.Error = clone(v)
		}
		return true
	})
	return ok, foreign
}

// scanParams reads a request's params, an object or null, as scanFast.
func scanParams(v []byte, req *fastRequest, foreign *bool) bool {
	if string(v) == "null" {
		return true
	}
	if v[0] != '{' {
		return false
	}
	seen := 0
	return rawrpc.Members(v, func(key, v []byte) bool {
		switch k := paramKey(key); k {
		case -1:
			*foreign = true
			return false
		case 0:
			return true
		default:
			if seen&(1<<k) != 0 {
				return false
			}
			seen |= 1 << k
		}
		p := &req.Params
		switch string(key) {
		case "name":
			return plainString(v, &p.Name)
		case "arguments":
			p.Arguments = clone(v)
		case "_meta":
			p.Meta = clone(v)
		case "task":
			p.Task = clone(v)
		case "requestState":
			p.RequestState = clone(v)
		case "requestId":
			p.RequestID = clone(v)
		}
		return true
	})
}

var (
	topKeys   = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramKeys = []string{"name", "arguments", "_meta", "task", "requestState", "requestId"}
)

// topKey and paramKey number a key among those read (from 1), 0 for
// another key, or -1 for one json.Unmarshal might match against a read
// one in another case (its matching folds case, Unicode included).
func topKey(key []byte) int   { return keyIndex(key, topKeys) }
func paramKey(key []byte) int { return keyIndex(key, paramKeys) }

func keyIndex(key []byte, keys []string) int {
	for i, k := range keys {
		if string(key) == k {
			return i + 1
		}
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return -1
		}
	}
	for _, k := range keys {
		if strings.EqualFold(string(key), k) {
			return -1
		}
	}
	return 0
}

// plainString sets *s to v, a JSON string without escapes, or leaves it
// for null as json.Unmarshal does; anything else is not read here.
func plainString(v []byte, s *string) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return false // json.Unmarshal unescapes, and replaces what is not UTF-8
	}
	switch t := v[1 : len(v)-1]; string(t) { // what every call holds, without a copy
	case "2.0":
		*s = "2.0"
	case "tools/call":
		*s = "tools/call"
	default:
		*s = string(t)
	}
	return true
}

// clone is a copy of raw JSON, as json.RawMessage keeps one.
func clone(v []byte) json.RawMessage { return append(json.RawMessage(nil), v...) }
