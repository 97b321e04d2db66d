package manager

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzTagLine: whatever line a server sends on a call's stream, tagging it
// never fails; a line is changed only to add the tag to the _meta of a
// request that asks the client, and everything else in it is kept.
func FuzzTagLine(f *testing.F) {
	f.Add([]byte(`data: {"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"hi","requestedSchema":{"type":"object"}}}` + "\n"))
	f.Add([]byte(`data:{"jsonrpc":"2.0","id":"x","method":"roots/list"}` + "\r\n"))
	f.Add([]byte(`data: {"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"_meta":{"progressToken":1},"messages":[]}}`))
	f.Add([]byte(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"roots/list"}}` + "\n"))
	f.Add([]byte(`data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"elicitation/create"}]}}` + "\n"))
	f.Add([]byte(`id: 7` + "\n"))
	f.Add([]byte(`data: {"id":1,"method":"roots/list","params":{"_meta":[1]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		in := bytes.Clone(line)
		out := tagLine(line, "TAG")
		if !bytes.Equal(line, in) {
			t.Fatalf("the line was modified in place")
		}
		if bytes.Equal(out, in) {
			return
		}
		body := bytes.TrimRight(in, "\r\n")
		if !bytes.HasSuffix(out, in[len(body):]) {
			t.Fatalf("line ending lost: %q → %q", in, out)
		}
		var before, after map[string]any
		if err := json.Unmarshal(bytes.TrimPrefix(body, []byte("data:")), &before); err != nil {
			t.Fatalf("changed a line that is not a JSON object: %q", in)
		}
		payload, ok := bytes.CutPrefix(bytes.TrimRight(out, "\r\n"), []byte("data: "))
		if !ok || json.Unmarshal(payload, &after) != nil {
			t.Fatalf("tagged line is not a data line of JSON: %q", out)
		}
		if !askingMethods[before["method"].(string)] {
			t.Fatalf("tagged a %v", before["method"])
		}
		params, _ := after["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		if meta[streamTagKey] != "TAG" {
			t.Fatalf("no tag in %q", out)
		}
		// Without the tag (and what was made to hold it) it is the same.
		delete(meta, streamTagKey)
		orig, _ := before["params"].(map[string]any)
		if _, had := orig["_meta"]; !had && len(meta) == 0 {
			delete(params, "_meta")
		}
		if _, had := before["params"]; (!had || before["params"] == nil) && len(params) == 0 {
			after["params"] = before["params"]
			if !had {
				delete(after, "params")
			}
		}
		a, _ := json.Marshal(after)
		b, _ := json.Marshal(before)
		if !bytes.Equal(a, b) {
			t.Fatalf("tagging changed more than _meta:\n%s\n%s", b, a)
		}
	})
}

// A stream passes through byte for byte, however it is read, but for the
// tag added to a request that asks; a line longer than the buffer passes
// as it is.
func TestTaggedStreamPassesThrough(t *testing.T) {
	long := "data: " + strings.Repeat("x", 3*maxTaggedLine) + "\n"
	ask := `data: {"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"hi"}}` + "\n"
	in := "id: 1\n" + long + "\n" + `data: {"jsonrpc":"2.0","id":2,"result":{}}` + "\n\n" + ask + "\nevent: message\ndata: tail"
	forgot := false
	s := newTaggedStream(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), "T", func() { forgot = true })
	got, err := io.ReadAll(iotest.HalfReader(s))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, ask, `data: {"id":3,"jsonrpc":"2.0","method":"elicitation/create","params":{"_meta":{"io.mcpvisor/stream":"T"},"message":"hi"}}`+"\n", 1)
	if string(got) != want {
		t.Fatalf("got %q…, want %q…", got[len(got)-200:], want[len(want)-200:])
	}
	_ = s.Close()
	if !forgot {
		t.Fatal("closing the stream kept its tag")
	}
}
