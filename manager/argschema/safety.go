package argschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds on a schema a server sends. Real tool schemas are a few KiB and a
// handful of levels deep; these leave ample room while keeping compilation
// and validation cheap and their recursion shallow.
const (
	maxSchemaBytes = 1 << 20 // its JSON
	maxNesting     = 64      // objects and arrays inside one another
	maxNodes       = 20000   // objects and arrays in all
)

// UnsafeError says why a schema cannot be used safely: validating against
// it could recurse forever (a $ref loop that consumes no data) or cost more
// than a tool schema ever should.
type UnsafeError struct{ Reason string }

func (e *UnsafeError) Error() string { return "unusable input schema: " + e.Reason }

// Safe reports whether a schema as a server sent it can be compiled and
// used: within the size, nesting and node bounds, and without a reference
// loop that consumes no data — {"$ref": "#"} at the root, or $defs a → b →
// a through $ref, $dynamicRef, allOf, anyOf, oneOf, not, if/then/else or
// dependentSchemas. The JSON Schema
// validator follows such a loop until the Go runtime dies of a stack
// overflow, which recover cannot catch. A property that refers back to the
// root ({"properties": {"a": {"$ref": "#"}}}) consumes a level of the
// data each time round and is a legitimate recursive schema.
func Safe(raw any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return &UnsafeError{"not JSON: " + err.Error()}
	}
	return safeJSON(b)
}

func safeJSON(b []byte) error {
	if len(b) > maxSchemaBytes {
		return &UnsafeError{fmt.Sprintf("%d bytes, over the %d-byte limit", len(b), maxSchemaBytes)}
	}
	// Walk the schema as the validator will see it: decoded into its
	// struct, where keys match case-insensitively and the last duplicate
	// wins ("$Ref" is a $ref), then written back with canonical keys.
	var typed jsonschema.Schema
	if err := json.Unmarshal(b, &typed); err != nil {
		return &UnsafeError{"not a JSON schema: " + err.Error()}
	}
	canon, err := json.Marshal(&typed)
	if err != nil {
		return &UnsafeError{"not a JSON schema: " + err.Error()}
	}
	var doc any
	if err := json.Unmarshal(canon, &doc); err != nil {
		return &UnsafeError{"not JSON: " + err.Error()}
	}
	w := walker{root: doc, nodes: map[string]any{}, base: &url.URL{}}
	if err := w.index(doc, "#", 0); err != nil {
		return err
	}
	if err := w.checkRefs(); err != nil {
		return err
	}
	state := map[string]int{}                                // 1: on the current path, 2: done
	for _, path := range slices.Sorted(maps.Keys(w.nodes)) { // sorted: the same loop is reported each time
		if err := w.loop(path, state, nil); err != nil {
			return err
		}
	}
	return nil
}

type walker struct {
	root  any
	nodes map[string]any // every object in the document, by JSON pointer
	base  *url.URL       // the document's URI: its root $id, else empty
}

// checkRefs sets the document's base URI and refuses what the loop check
// cannot follow: an $id below the root (references inside would resolve
// against it) and a reference that is neither in this document nor
// absolute (a relative one such as "//" or "?x" may resolve back to the
// document itself). Tool schemas use "#/$defs/…" references.
func (w *walker) checkRefs() error {
	if root, ok := w.root.(map[string]any); ok {
		if id, ok := root["$id"].(string); ok {
			u, err := url.Parse(id)
			if err != nil {
				return &UnsafeError{fmt.Sprintf("$id %q is not a URI", id)}
			}
			u.Fragment, u.RawFragment = "", ""
			w.base = u
		}
	}
	for _, path := range slices.Sorted(maps.Keys(w.nodes)) {
		node, _ := w.nodes[path].(map[string]any)
		if _, ok := node["$id"]; ok && path != "#" {
			return &UnsafeError{fmt.Sprintf("an $id inside the schema (at %s): references relative to it cannot be checked", path)}
		}
		for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			ref, ok := node[k].(string)
			if !ok {
				continue
			}
			if _, local := w.fragment(ref); local {
				continue
			}
			if u, err := url.Parse(ref); err == nil && u.Scheme != "" && u.Host != "" {
				continue // another document: the validator does not load it, and says so
			}
			return &UnsafeError{fmt.Sprintf("%s %q at %s is a relative reference; only references within the schema (\"#/$defs/…\") or to absolute URIs can be checked", k, ref, path)}
		}
	}
	return nil
}

// fragment returns the fragment of ref (without "#", unescaped) when ref
// points into this document, resolved against its base URI as the
// validator resolves it.
func (w *walker) fragment(ref string) (string, bool) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	r := w.base.ResolveReference(u)
	frag := r.Fragment
	r.Fragment, r.RawFragment = "", ""
	if r.String() != w.base.String() {
		return "", false
	}
	return frag, true
}

// index records every object under v and enforces the bounds.
func (w *walker) index(v any, path string, depth int) error {
	if depth > maxNesting {
		return &UnsafeError{fmt.Sprintf("nested deeper than %d levels", maxNesting)}
	}
	switch x := v.(type) {
	case map[string]any:
		w.nodes[path] = x
		for k, e := range x {
			if err := w.index(e, path+"/"+escapePointer(k), depth+1); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := w.index(e, path+"/"+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if len(w.nodes) > maxNodes {
		return &UnsafeError{fmt.Sprintf("more than %d objects", maxNodes)}
	}
	return nil
}

// loop follows the edges that apply another schema to the same data from
// path, depth first, and reports a cycle among them.
func (w *walker) loop(path string, state map[string]int, trail []string) error {
	switch state[path] {
	case 1:
		cycle := append(trail[slices.Index(trail, path):], path)
		return &UnsafeError{"reference loop that never consumes data: " + strings.Join(cycle, " → ")}
	case 2:
		return nil
	}
	state[path] = 1
	for _, next := range w.inPlace(path) {
		if err := w.loop(next, state, append(trail, path)); err != nil {
			return err
		}
	}
	state[path] = 2
	return nil
}

// inPlace lists the schemas that apply to the same data as the schema at
// path: its local $ref (and $dynamicRef, $recursiveRef) target and its
// in-place applicators, dependentSchemas included.
func (w *walker) inPlace(path string) []string {
	node, _ := w.nodes[path].(map[string]any)
	var out []string
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if ref, ok := node[k].(string); ok {
			if target, ok := w.resolve(ref); ok {
				out = append(out, target)
			}
		}
	}
	if deps, ok := node["dependentSchemas"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(deps)) {
			if _, ok := deps[k].(map[string]any); ok {
				out = append(out, path+"/dependentSchemas/"+escapePointer(k))
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := node[k].([]any); ok {
			for i := range list {
				out = append(out, path+"/"+k+"/"+strconv.Itoa(i))
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if _, ok := node[k].(map[string]any); ok {
			out = append(out, path+"/"+k)
		}
	}
	return out
}

// resolve maps a reference into this document ("#", "#/$defs/a", or one
// that resolves to the document's own URI) to the pointer of an object in
// it. Other references are the validator's business: it refuses what it
// cannot load.
func (w *walker) resolve(ref string) (string, bool) {
	frag, local := w.fragment(ref)
	if !local {
		return "", false
	}
	if frag == "" {
		return "#", true
	}
	if !strings.HasPrefix(frag, "/") {
		return w.anchor(frag)
	}
	var cur any = w.root
	path := "#"
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return "", false
			}
			cur = x[i]
		default:
			return "", false
		}
		path += "/" + escapePointer(tok)
	}
	if _, ok := cur.(map[string]any); !ok {
		return "", false
	}
	return path, true
}

// anchor finds the object whose $anchor is name.
func (w *walker) anchor(name string) (string, bool) {
	for path, n := range w.nodes {
		if m, ok := n.(map[string]any); ok && m["$anchor"] == name {
			return path, true
		}
	}
	return "", false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
