package clientconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ErrNotJSON is returned for a file that is not plain JSON (comments,
// trailing commas): such a file is left for the person to edit.
var ErrNotJSON = errors.New("not plain JSON")

// listKey is the top-level key of the server list in a JSON format.
func listKey(f Format) string {
	if f == Servers {
		return "servers"
	}
	return "mcpServers"
}

// setJSON adds or replaces the member name of the object at key (made if
// missing) with v, keeping the rest of data byte for byte. New text is
// indented like the text around it.
func setJSON(data []byte, key, name string, v any) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	if !json.Valid(data) {
		return nil, ErrNotJSON
	}
	start := 0
	for start < len(data) && isSpace(data[start]) {
		start++
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil, fmt.Errorf("%w: the file is not a JSON object", ErrNotJSON)
	}
	list := gjson.GetBytes(data, escape(key))
	if !list.Exists() {
		var err error
		if data, err = insertMember(data, start, root.Raw, key, map[string]any{}); err != nil {
			return nil, err
		}
		list = gjson.GetBytes(data, escape(key))
	}
	if !list.IsObject() {
		return nil, fmt.Errorf("%w: %q is not an object", ErrNotJSON, key)
	}
	if old := gjson.GetBytes(data, escape(key)+"."+escape(name)); old.Exists() {
		raw, err := render(v, indentOf(data, old.Index), unitOf(data))
		if err != nil {
			return nil, err
		}
		return splice(data, old.Index, old.Index+len(old.Raw), raw), nil
	}
	return insertMember(data, list.Index, list.Raw, name, v)
}

// deleteJSON takes the member name out of the object at key; it reports
// whether there was one.
func deleteJSON(data []byte, key, name string) ([]byte, bool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return data, false, nil
	}
	if !json.Valid(data) {
		return nil, false, ErrNotJSON
	}
	path := escape(key) + "." + escape(name)
	if !gjson.GetBytes(data, path).Exists() {
		return data, false, nil
	}
	out, err := sjson.DeleteBytes(data, path)
	if err != nil {
		return nil, false, fmt.Errorf("take %q out of %q: %w", name, key, err)
	}
	return out, true, nil
}

// insertMember adds "name": v as the last member of the object whose text
// is obj at offset at.
func insertMember(data []byte, at int, obj, name string, v any) ([]byte, error) {
	end := at + len(obj) - 1
	for end > at && data[end] != '}' { // past any white space gjson kept
		end--
	}
	last := end - 1
	for last > at && isSpace(data[last]) {
		last--
	}
	keyText, _ := json.Marshal(name)
	if !bytes.ContainsRune(data, '\n') { // a one-line file stays one line
		val, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		sep := ","
		if last == at {
			sep = ""
		}
		return splice(data, last+1, last+1, []byte(sep+string(keyText)+":"+string(val))), nil
	}
	unit := unitOf(data)
	outer := indentOf(data, at)
	inner := outer + unit
	val, err := render(v, inner, unit)
	if err != nil {
		return nil, err
	}
	member := "\n" + inner + string(keyText) + ": " + string(val)
	if last == at { // an empty object: replace what is between the braces
		return splice(data, at+1, end, []byte(member+"\n"+outer)), nil
	}
	return splice(data, last+1, last+1, []byte(","+member)), nil
}

// render is v as indented JSON whose continuation lines start at prefix.
func render(v any, prefix, unit string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// indentOf is the leading white space of the line holding offset at.
func indentOf(data []byte, at int) string {
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	end := start
	for end < len(data) && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// unitOf is the file's unit of indentation: that of its first indented
// line, else two spaces.
func unitOf(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && len(trimmed) > 0 {
			return string(line[:n])
		}
	}
	return "  "
}

func splice(data []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(data)-(to-from)+len(with))
	out = append(out, data[:from]...)
	out = append(out, with...)
	return append(out, data[to:]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// escape makes s one literal component of a gjson/sjson path.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
