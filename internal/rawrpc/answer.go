package rawrpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// answerOf reads line as an answer to a raw call: the call's id and what
// it is answered with; ok is false when line is no such answer (not
// JSON-RPC the reader takes, a request, or an id outside the channel's id
// space), for the SDK to read. It reads line as json.Unmarshal into
// {id, method, result, error} reads it; the commonest answer, a result
// with plain member names, is read in one pass without decoding it, and
// anything else (an error, a member named in another case or with
// escapes, a duplicate) is decoded.
func answerOf(line []byte) (id string, a answer, ok bool) {
	if !json.Valid(line) {
		return "", answer{}, false
	}
	if id, result, read := plainResult(line); read {
		if id == "" {
			return "", answer{}, false
		}
		return id, answer{result: bytes.Clone(result)}, true // line is the reader's buffer
	}
	return decodeAnswer(line)
}

// decodeAnswer is answerOf by json.Unmarshal.
func decodeAnswer(line []byte) (string, answer, bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil {
		return "", answer{}, false
	}
	var id string
	if json.Unmarshal(msg.ID, &id) != nil || !ours(id) {
		return "", answer{}, false
	}
	switch {
	case msg.Error != nil:
		return id, answer{err: msg.Error}, true
	case msg.Result == nil:
		return id, answer{err: errors.New("the server's answer has neither a result nor an error")}, true
	}
	return id, answer{result: msg.Result}, true
}

// ours reports whether id is in the channel's id space.
func ours(id string) bool { return len(id) > len(IDPrefix) && id[:len(IDPrefix)] == IDPrefix }

// plainResult reads line, valid JSON, as an object whose members are
// named in plain lower-case ASCII, none of them twice, holding a result
// and neither a method nor an error. It returns the id (if it is a
// string of the channel's id space, in ASCII without escapes; "" when
// the line answers none of its calls) and the result, as slices of line; read is
// false when line is not such an object, for json.Unmarshal to read.
func plainResult(line []byte) (id string, result []byte, read bool) {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return "", nil, false // not an object: Unmarshal refuses it
	}
	i++
	var rawID []byte
	var seen [3]bool // jsonrpc, id, result
	for {
		i = skipSpace(line, i)
		if line[i] == '}' {
			break
		}
		if line[i] == ',' {
			i = skipSpace(line, i+1)
		}
		// A member: its name (a string) and, past the colon, its value.
		end := stringEnd(line, i)
		name := line[i+1 : end-1]
		i = skipSpace(line, end)
		i = skipSpace(line, i+1) // the colon
		vend := valueEnd(line, i)
		value := line[i:vend]
		i = vend
		slot := -1
		switch string(name) {
		case "jsonrpc":
			slot = 0
		case "id":
			slot, rawID = 1, value
		case "result":
			slot, result = 2, value
		case "method", "error":
			return "", nil, false
		default:
			if foreign(name) {
				return "", nil, false // a name Unmarshal may match to a field
			}
		}
		if slot >= 0 {
			if seen[slot] {
				return "", nil, false // the last one counts: Unmarshal's to judge
			}
			seen[slot] = true
		}
	}
	if result == nil {
		return "", nil, false
	}
	if len(rawID) < 2 || rawID[0] != '"' {
		return "", result, true // no id, or not a string: no call of ours
	}
	if !plainASCII(rawID) {
		return "", nil, false // escapes, or bytes Unmarshal may replace
	}
	if id = string(rawID[1 : len(rawID)-1]); !ours(id) {
		return "", result, true
	}
	return id, result, true
}

// plainASCII reports whether b is ASCII without escapes.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// foreign reports whether a member name other than the four read may
// still be matched to one of them by json.Unmarshal, which compares
// names after unescaping them and folding their case (with Unicode's
// simple folding: K is the Kelvin sign's, s is ſ's).
func foreign(name []byte) bool {
	if bytes.IndexByte(name, '\\') >= 0 || bytes.ContainsAny(name, "\u212aſ") {
		return true
	}
	for _, known := range []string{"id", "method", "result", "error", "jsonrpc"} {
		if len(name) == len(known) && bytes.EqualFold(name, []byte(known)) {
			return true
		}
	}
	return false
}

// skipSpace is the index of the first byte of b at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i] (a
// quote), b valid JSON.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the value that starts at b[i], b valid
// JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
