package rawrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// rawAnswer is what the reader reads of a line that may answer a raw
// call.
type rawAnswer struct {
	ID     string
	Result json.RawMessage
	Error  *Error
}

// readAnswer reads line, one JSON-RPC message, as a response with a
// string id, as json.Unmarshal reads it into the members of a response;
// ok is false for anything else (not JSON, a request, an id that is not
// a string). An answer written plainly, as servers write them (the keys
// in their case, each once, the id without escapes, no error), is read
// without decoding (readPlain); any other goes through json.Unmarshal.
func readAnswer(line []byte) (a rawAnswer, ok bool) {
	if !json.Valid(line) {
		return a, false
	}
	if a, plain := readPlain(line); plain {
		return a, true
	}
	return decodeAnswer(line)
}

// decodeAnswer is readAnswer by json.Unmarshal.
func decodeAnswer(line []byte) (a rawAnswer, ok bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil {
		return a, false
	}
	if json.Unmarshal(msg.ID, &a.ID) != nil {
		return a, false
	}
	a.Result, a.Error = msg.Result, msg.Error
	return a, true
}

// readPlain reads line, valid JSON, as decodeAnswer does, if it is an
// answer written plainly; plain is false when it leaves the line to
// decodeAnswer (which may find it is no answer).
func readPlain(line []byte) (a rawAnswer, plain bool) {
	var seenID, seenResult bool
	plain = Members(line, func(key, v []byte) bool {
		switch string(key) {
		case "id":
			if seenID || len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
				return false // twice, not a string, or one to unescape or to mend
			}
			seenID = true
			a.ID = string(v[1 : len(v)-1])
		case "result":
			if seenResult {
				return false
			}
			seenResult = true
			a.Result = append(json.RawMessage(nil), v...) // line is the reader's buffer
		case "method", "error":
			return false // a request, or an error answer: rare, decoded
		default:
			return !foldsToMember(key)
		}
		return true
	})
	return a, plain && seenID
}

// foldsToMember reports whether json.Unmarshal might take key for a member
// readPlain reads: it matches keys without regard to case, Unicode's
// simple folding included (K, the Kelvin sign, folds to k).
func foldsToMember(key []byte) bool {
	for _, b := range key {
		if b >= 0x80 {
			return true
		}
	}
	for _, m := range []string{"id", "result", "method", "error"} {
		if strings.EqualFold(string(key), m) {
			return true
		}
	}
	return false
}
