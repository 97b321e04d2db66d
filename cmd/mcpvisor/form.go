package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// formField is one property of an elicitation form, as the terminal asks
// for it. Elicitation schemas are flat: strings (maybe with a format or a
// choice of values), numbers, integers, booleans, and arrays of choices.
type formField struct {
	name        string
	title       string // the schema's title, else the property's name
	description string
	kind        string // string, number, integer, boolean or array
	format      string // of a string: email, uri, date, date-time
	required    bool
	def         any // the default, when hasDefault
	hasDefault  bool
	choices     []formChoice // enum, oneOf or the items' enum/anyOf
	// lo and hi bound the value (numbers), its length (strings) or the
	// number of choices (arrays), when set.
	lo, hi *float64
}

// formChoice is one value a field may take, and what the person sees.
type formChoice struct {
	value string
	label string
}

// formFields reads the requested schema's properties, the required ones
// first in the order the schema lists them, then the others by name (a
// JSON object's order does not survive decoding).
func formFields(schema any) ([]formField, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("the requested schema: %w", err)
	}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the requested schema: %w", err)
	}
	var fields []formField
	for name, prop := range s.Properties {
		f := readField(name, prop)
		f.required = slices.Contains(s.Required, name)
		fields = append(fields, f)
	}
	rank := func(f formField) int {
		if i := slices.Index(s.Required, f.name); i >= 0 {
			return i
		}
		return len(s.Required)
	}
	sort.Slice(fields, func(i, j int) bool {
		ri, rj := rank(fields[i]), rank(fields[j])
		if ri != rj {
			return ri < rj
		}
		return fields[i].name < fields[j].name
	})
	return fields, nil
}

// readField reads one property's schema.
func readField(name string, p map[string]any) formField {
	f := formField{name: name, title: name}
	f.title = stringOr(p["title"], name)
	f.description = stringOr(p["description"], "")
	f.kind = stringOr(p["type"], "string")
	f.format = stringOr(p["format"], "")
	f.def, f.hasDefault = p["default"]
	switch f.kind {
	case "number", "integer":
		f.lo, f.hi = number(p["minimum"]), number(p["maximum"])
	case "string":
		f.lo, f.hi = number(p["minLength"]), number(p["maxLength"])
		f.choices = choicesOf(p)
	case "array":
		f.lo, f.hi = number(p["minItems"]), number(p["maxItems"])
		if items, ok := p["items"].(map[string]any); ok {
			f.choices = choicesOf(items)
		}
	}
	return f
}

// choicesOf reads enum (with the legacy enumNames as labels), or oneOf /
// anyOf entries {const, title}.
func choicesOf(p map[string]any) []formChoice {
	var out []formChoice
	if values, ok := p["enum"].([]any); ok {
		names, _ := p["enumNames"].([]any)
		for i, v := range values {
			c := formChoice{value: fmt.Sprint(v)}
			c.label = c.value
			if i < len(names) {
				c.label = stringOr(names[i], c.value)
			}
			out = append(out, c)
		}
		return out
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		entries, _ := p[key].([]any)
		for _, e := range entries {
			m, ok := e.(map[string]any)
			if !ok || m["const"] == nil {
				continue
			}
			c := formChoice{value: fmt.Sprint(m["const"])}
			c.label = stringOr(m["title"], c.value)
			out = append(out, c)
		}
	}
	return out
}

func stringOr(v any, def string) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return def
}

func number(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

// prompt is the line the field is asked on: title, what to type, whether
// it is required, and the default Enter keeps.
func (f formField) prompt() string {
	hint := f.hint()
	if f.required {
		hint += ", required"
	}
	p := fmt.Sprintf("%s (%s)", textsafe.Line(f.title), hint)
	if f.hasDefault {
		p += " [" + textsafe.Line(f.show(f.def)) + "]"
	}
	return p + ": "
}

// hint says what to type.
func (f formField) hint() string {
	switch {
	case f.kind == "boolean":
		return "y/n"
	case f.kind == "array":
		h := fmt.Sprintf("numbers 1-%d, comma-separated", len(f.choices))
		if r := boundsText(f.lo, f.hi, "choices"); r != "" {
			h += ", " + r
		}
		return h
	case len(f.choices) > 0:
		return fmt.Sprintf("1-%d", len(f.choices))
	case f.kind == "number" || f.kind == "integer":
		h := map[string]string{"number": "number", "integer": "whole number"}[f.kind]
		if r := boundsText(f.lo, f.hi, ""); r != "" {
			h += ", " + r
		}
		return h
	}
	h := "text"
	switch f.format {
	case "date":
		h = "date, YYYY-MM-DD"
	case "date-time":
		h = "date and time, like 2006-01-02T15:04:05Z"
	case "email", "uri":
		h = f.format
	}
	if r := boundsText(f.lo, f.hi, "characters"); r != "" {
		h += ", " + r
	}
	return h
}

// boundsText says a range: "1 to 100", "at least 1", "at most 3 choices".
func boundsText(lo, hi *float64, unit string) string {
	s := ""
	switch {
	case lo != nil && hi != nil:
		s = fmt.Sprintf("%s to %s", num(*lo), num(*hi))
	case lo != nil:
		s = "at least " + num(*lo)
	case hi != nil:
		s = "at most " + num(*hi)
	default:
		return ""
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// show renders a value of the field as the person would type it (a
// choice by its label).
func (f formField) show(v any) string {
	label := func(s string) string {
		for _, c := range f.choices {
			if c.value == s {
				return c.label
			}
		}
		return s
	}
	switch x := v.(type) {
	case bool:
		if x {
			return "y"
		}
		return "n"
	case float64:
		return num(x)
	case string:
		return label(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = label(fmt.Sprint(e))
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// errSkip is an optional field left empty: it is not sent.
var errSkip = errors.New("left empty")

// parse turns what the person typed into the field's value, or says what
// is wrong with it (shown, and the field asked again). Empty input takes
// the default, skips an optional field, and is refused for a required one.
func (f formField) parse(input string) (any, error) {
	if strings.TrimSpace(input) == "" {
		switch {
		case f.hasDefault:
			return f.def, nil
		case f.required:
			return nil, errors.New("a value is required (Ctrl-C declines the whole form)")
		}
		return nil, errSkip
	}
	trimmed := strings.TrimSpace(input)
	switch {
	case f.kind == "boolean":
		switch strings.ToLower(trimmed) {
		case "y", "yes", "true", "t", "1":
			return true, nil
		case "n", "no", "false", "f", "0":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case f.kind == "array":
		return f.parseChoices(trimmed)
	case len(f.choices) > 0:
		return f.choose(trimmed)
	case f.kind == "number" || f.kind == "integer":
		return f.parseNumber(trimmed)
	}
	return f.parseString(input)
}

func (f formField) parseNumber(s string) (any, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	if f.kind == "integer" && v != math.Trunc(v) {
		return nil, fmt.Errorf("%s is not a whole number", s)
	}
	if (f.lo != nil && v < *f.lo) || (f.hi != nil && v > *f.hi) {
		return nil, fmt.Errorf("%s is out of range: %s", s, boundsText(f.lo, f.hi, ""))
	}
	if f.kind == "integer" {
		return int64(v), nil
	}
	return v, nil
}

func (f formField) parseString(s string) (any, error) {
	n := float64(utf8.RuneCountInString(s))
	if (f.lo != nil && n < *f.lo) || (f.hi != nil && n > *f.hi) {
		return nil, fmt.Errorf("%d characters; this field takes %s", int(n), boundsText(f.lo, f.hi, "characters"))
	}
	switch f.format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return nil, fmt.Errorf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || !u.IsAbs() {
			return nil, fmt.Errorf("%q is not an absolute URI (like https://example.com)", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return nil, fmt.Errorf("%q is not a date like 2006-01-02", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, fmt.Errorf("%q is not a date and time like 2006-01-02T15:04:05Z", s)
		}
	}
	return s, nil
}

// choose reads one choice: its number, value or label.
func (f formField) choose(s string) (string, error) {
	if i, err := strconv.Atoi(s); err == nil {
		if i >= 1 && i <= len(f.choices) {
			return f.choices[i-1].value, nil
		}
	}
	for _, c := range f.choices {
		if s == c.value || strings.EqualFold(s, c.label) || strings.EqualFold(s, c.value) {
			return c.value, nil
		}
	}
	return "", fmt.Errorf("%q is not one of the choices: type its number, 1 to %d", s, len(f.choices))
}

// parseChoices reads a comma-separated list of choices.
func (f formField) parseChoices(s string) (any, error) {
	var picked []any
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := f.choose(part)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(picked, any(v)) {
			picked = append(picked, v)
		}
	}
	n := float64(len(picked))
	if (f.lo != nil && n < *f.lo) || (f.hi != nil && n > *f.hi) {
		return nil, fmt.Errorf("%d chosen; choose %s", len(picked), boundsText(f.lo, f.hi, ""))
	}
	return picked, nil
}
