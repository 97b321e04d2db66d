package rawrpc

import (
	"bytes"
	"encoding/json"
)

// IsError reads the isError flag of a tools/call result, raw, as
// json.Unmarshal into a struct with an `json:"isError"` bool reads it: an
// error if result is not an object (or null), the flag's value
// otherwise. result must be valid JSON, as [Conn.Call]'s results are (the
// whole answer was decoded to find them).
//
// Most results have no such member: when no key can be one, it answers
// without decoding. encoding/json matches keys case-insensitively, after
// unescaping, and with Unicode's simple folding (ſ folds to s), so a
// result that holds "iserror" in any case, an escape \u, or ſ anywhere
// is decoded.
func IsError(result json.RawMessage) (bool, error) {
	t := bytes.TrimLeft(result, " \t\r\n")
	if len(t) > 0 && t[0] == '{' && !containsFold(t, isErrorKey) &&
		!bytes.Contains(t, []byte(`\u`)) && !bytes.Contains(t, []byte("ſ")) {
		return false, nil
	}
	var flag struct {
		IsError bool `json:"isError"`
	}
	err := json.Unmarshal(result, &flag)
	return flag.IsError, err
}

// isErrorKey is the flag's name, lower case.
const isErrorKey = "iserror"

// containsFold reports whether b contains lower (ASCII lower case) in any
// ASCII case.
func containsFold(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		j := 0
		for j < len(lower) && b[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// inputRequestsKey is the member of a result by which a server of
// protocol 2026-07-28 or later asks its client for input before it
// answers (a multi-round-trip request).
const inputRequestsKey = "inputRequests"

// InputRequired reports whether result, a tools/call result (valid JSON),
// may ask the client for input: it has an inputRequests member, matched
// as the go-sdk's client matches it (case-sensitively, after unescaping).
// It may report true for a result whose inputRequests is null, which the
// go-sdk reads as none; never false for one that asks.
func InputRequired(result json.RawMessage) bool {
	if bytes.Contains(result, []byte(inputRequestsKey)) {
		return true
	}
	if !bytes.Contains(result, []byte(`\u`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return false
	}
	_, ok := m[inputRequestsKey]
	return ok
}
