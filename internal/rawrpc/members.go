package rawrpc

import "bytes"

// Members calls member for each member of the object that text, one valid
// JSON value, is, with its key (the text's own bytes between the quotes,
// not a copy) and its value, raw; it stops, reporting false, when member
// does, or when text is not an object or has a key written with escapes
// (which only a decoder reads as it is meant). It reads without
// decoding: text must be valid JSON (json.Valid), which it does not check.
func Members(text []byte, member func(key, value []byte) bool) bool {
	sc := scan{b: text}
	sc.space()
	if sc.i >= len(sc.b) || sc.b[sc.i] != '{' {
		return false
	}
	sc.i++
	for {
		sc.space()
		if sc.i >= len(sc.b) {
			return false
		}
		switch sc.b[sc.i] {
		case '}':
			sc.i++
			sc.space()
			return sc.i == len(sc.b)
		case ',':
			sc.i++
			continue
		case '"':
		default:
			return false
		}
		start := sc.i
		sc.str()
		key := sc.b[start+1 : sc.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != ':' {
			return false
		}
		sc.i++
		sc.space()
		vstart := sc.i
		sc.value()
		if !member(key, sc.b[vstart:sc.i]) {
			return false
		}
	}
}

// scan walks one valid JSON text.
type scan struct {
	b []byte
	i int
}

func (sc *scan) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\r', '\n':
			sc.i++
		default:
			return
		}
	}
}

// str moves past the string at i.
func (sc *scan) str() {
	sc.i++ // the opening quote
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case '\\':
			sc.i += 2
		case '"':
			sc.i++
			return
		default:
			sc.i++
		}
	}
}

// value moves past the value at i: the text is valid JSON, so a value
// ends where its brackets close or, for a literal or number, at the next
// delimiter.
func (sc *scan) value() {
	if sc.i >= len(sc.b) {
		return
	}
	switch sc.b[sc.i] {
	case '"':
		sc.str()
	case '{', '[':
		depth := 0
		for sc.i < len(sc.b) {
			switch sc.b[sc.i] {
			case '"':
				sc.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			sc.i++
			if depth == 0 {
				return
			}
		}
	default:
		for sc.i < len(sc.b) {
			switch sc.b[sc.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
			sc.i++
		}
	}
}
