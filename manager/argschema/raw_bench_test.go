package argschema

import (
	"encoding/json"
	"testing"
)

// BenchmarkForwardArguments measures what a gateway call's arguments cost
// on their way from the client's JSON to the JSON sent upstream, as the
// SDK encodes params: before, decoded to a map, checked as a map and
// encoded again ("map"); now, checked from the JSON and sent as it came
// ("raw"). "flat" is the demo add tool's schema (checked without the
// general validator), "small" and "nested" searchSchema's, with one
// argument and with every kind of property.
func BenchmarkForwardArguments(b *testing.B) {
	var raw any
	if err := json.Unmarshal([]byte(searchSchema), &raw); err != nil {
		b.Fatal(err)
	}
	search, err := Compile(raw)
	if err != nil {
		b.Fatal(err)
	}
	add, err := Compile(demoTool(b, "add").InputSchema)
	if err != nil {
		b.Fatal(err)
	}
	for _, args := range []struct {
		name   string
		schema *Schema
		json   string
	}{
		{"flat", add, `{"a":2,"b":40}`},
		{"small", search, `{"query":"x"}`},
		{"nested", search, `{"query":"golang generics","limit":25,"tags":["go","types","generics","constraints"],` +
			`"matrix":[[1,2,3],[4,5,6],[7,8,9]],"meta":{"source":"cli","trace":"4bf92f3577b34da6","ts":1732700000},` +
			`"options":{"depth":3,"mode":"full"}}`},
	} {
		msg, s := json.RawMessage(args.json), args.schema
		b.Run(args.name+"/map", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(msg, &v); err != nil {
					b.Fatal(err)
				}
				checked, err := s.Check(v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(checked); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(args.name+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				checked, err := s.Check(msg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(checked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
