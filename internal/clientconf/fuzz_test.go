package clientconf

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzSetJSON: whatever JSON object a client's file holds, adding mcpvisor
// gives valid JSON with the entry in it (and Get reads it back), every
// other top-level key unchanged, and taking it out again gives back the
// original bytes.
func FuzzSetJSON(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte("{\n  \"mcpServers\": {\n    \"a\": {}\n  }\n}\n"))
	f.Add([]byte(`{"mcpServers":{"mcpvisor":1}}`))
	f.Add([]byte(" {\"x\": [1, {\"mcpServers\": 2}]} \n"))
	cursor, _ := Lookup("cursor")
	f.Fuzz(func(t *testing.T, in []byte) {
		var doc map[string]json.RawMessage
		if json.Unmarshal(in, &doc) != nil || doc == nil {
			return
		}
		out, err := cursor.Set(in, EntryName, entry)
		if err != nil {
			return // refused (a list that is not an object): nothing written
		}
		if !json.Valid(out) {
			t.Fatalf("Set(%q) = %q: not JSON", in, out)
		}
		if !gjson.GetBytes(out, "mcpServers.mcpvisor.command").Exists() {
			t.Fatalf("Set(%q) = %q: no entry", in, out)
		}
		if got, ok, err := cursor.Get(out, EntryName); err != nil || !ok || got["command"] != entry["command"] {
			t.Fatalf("Get(Set(%q)) = %v, %v, %v", in, got, ok, err)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatal(err)
		}
		for k, v := range doc {
			if k != "mcpServers" && string(after[k]) != string(v) {
				t.Fatalf("key %q changed: %s -> %s", k, v, after[k])
			}
		}
		list := gjson.GetBytes(in, "mcpServers")
		if !list.Exists() || gjson.GetBytes(in, "mcpServers.mcpvisor").Exists() {
			return
		}
		back, found, err := cursor.Delete(out, EntryName)
		if err != nil || !found {
			t.Fatalf("Delete(Set(%q)) = %q, %v, %v", in, back, found, err)
		}
		// Byte for byte when other servers are listed; an empty list may
		// keep the line break the entry was written on.
		if len(list.Map()) > 0 && string(back) != string(in) {
			t.Fatalf("Delete(Set(%q)) = %q", in, back)
		}
		if gjson.GetBytes(back, "mcpServers").String() != "" && len(gjson.GetBytes(back, "mcpServers").Map()) != len(list.Map()) {
			t.Fatalf("Delete(Set(%q)) = %q: servers changed", in, back)
		}
	})
}
