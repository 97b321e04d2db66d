package main

import (
	"encoding/json"
	"testing"
)

// A server's requested form is untrusted: reading it, showing its fields
// and parsing what the person types never panic, whatever it is.
func FuzzFormFields(f *testing.F) {
	f.Add(`{"type":"object","properties":{"name":{"type":"string","title":"Name"},"n":{"type":"integer","minimum":1}},"required":["name"]}`, "42")
	f.Add(`{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r","title":"Red"}]}}}`, "1")
	f.Add(`{"type":"object","properties":{"tags":{"type":"array","items":{"enum":["a","b"]}}}}`, "a,b")
	f.Add(`{"properties":{"b":{"type":"boolean","default":true}}}`, "y")
	f.Fuzz(func(t *testing.T, schema, input string) {
		var s any
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		fields, err := formFields(s)
		if err != nil {
			return
		}
		for _, fl := range fields {
			_ = fl.prompt()
			_ = fl.hint()
			if v, err := fl.parse(input); err == nil {
				_ = fl.show(v)
			}
		}
	})
}
