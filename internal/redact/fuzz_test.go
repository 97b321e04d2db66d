package redact

import (
	"strings"
	"testing"
)

// FuzzRedact: whatever the values and the text, what String returns holds
// no value in any of its forms, and text that held none comes back as it
// was.
func FuzzRedact(f *testing.F) {
	f.Add("ARGSECRET-wwww-11223344", "starting with args: --api-key=ARGSECRET-wwww-11223344", "")
	f.Add("a${S}b", "aa${ONE}bb", "")
	f.Add("aaaaaa", "aaaaaaaaaaaaa", "aaaaab")
	f.Add(`p@ss "w0rd"`, `{"env":{"PASS":"p@ss \"w0rd\""}}`, "p%40ss+%22w0rd%22")
	f.Fuzz(func(t *testing.T, v1, text, v2 string) {
		s := New(map[string]string{"ONE": v1, "TWO": v2})
		got := s.String(text)
		var all []string
		for _, v := range []string{v1, v2} {
			for _, form := range forms(v) {
				if len(form) >= MinLen {
					all = append(all, form)
				}
			}
		}
		held := false
		for _, form := range all {
			if strings.Contains(got, form) {
				t.Fatalf("%q (a form of a value) shown in %q", form, got)
			}
			held = held || strings.Contains(text, form)
		}
		if !held && got != text {
			t.Fatalf("text with no value changed: %q became %q", text, got)
		}
	})
}
