package rawrpc

import (
	"bytes"
	"encoding/json"
)

// IsNotice reports whether msg, one JSON-RPC message, is a log or
// progress notification as the go-sdk reads it (its members matched as
// encoding/json matches them). Most messages hold no "notifications" at
// all and are not decoded.
func IsNotice(msg []byte) bool {
	if !bytes.Contains(msg, []byte("notifications")) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) > 0 {
		return false
	}
	return m.Method == "notifications/message" || m.Method == "notifications/progress"
}
