package manager

import "encoding/json"

// minFrameSize is a lower bound of the JSON size of a call's arguments:
// the bytes of every string, key and number in them, without quotes,
// escapes or punctuation. It allocates nothing, so every call can afford
// it; it stops counting once past limit. It knows the shapes arguments
// have when they come from JSON or Lua (and raw JSON); anything else
// counts as one byte.
func minFrameSize(v any, limit int) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case json.RawMessage:
		return len(x)
	case []byte:
		return len(x) * 4 / 3 // sent as base64
	case map[string]any:
		n := 0
		for k, e := range x {
			if n += len(k) + minFrameSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			if n += 1 + minFrameSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	}
	return 1
}
