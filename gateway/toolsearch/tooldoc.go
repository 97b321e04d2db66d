package toolsearch

import "strings"

// field is a part of a tool that is indexed on its own, with its own
// weight.
type field uint8

const (
	fieldName field = iota
	fieldTags
	fieldServer
	fieldDescription
	fieldParams
	numFields
)

var fieldNames = [numFields]string{"name", "tags", "server", "description", "params"}

func (f field) String() string { return fieldNames[f] }

// Field weights and length normalisation (BM25F). A word in the name or in
// the user's tags says most about what a tool does; the server's name
// narrows; the description is the usual BM25 text; parameters are long and
// say more about how than what, so they count least.
var (
	fieldWeight = [numFields]float64{3, 3, 1, 1, 0.5}
	fieldB      = [numFields]float64{0.3, 0, 0, 0.75, 0.75}
)

// k1 is BM25's term-frequency saturation.
const k1 = 1.2

// freqs is how often a term occurs in each field of one tool.
type freqs [numFields]uint16

// doc is one indexed tool. It is immutable once made: snapshots share it.
type doc struct {
	entry Entry
	line  string // one-line description
	// server is entry.Server lower-cased, for the server filter.
	server string
	tf     map[string]freqs
	len    [numFields]int
}

// newDoc analyses e, with keys as analyze takes it.
func newDoc(e Entry, keys map[string][]string) *doc {
	d := &doc{entry: e, line: oneLine(e.Description), server: strings.ToLower(e.Server), tf: map[string]freqs{}}
	var buf []term
	add := func(f field, texts ...string) {
		buf = buf[:0]
		for _, s := range texts {
			buf = analyze(buf, s, maxFieldTerms-len(buf), keys)
		}
		for _, t := range buf {
			fr := d.tf[t.key]
			if fr[f] < ^uint16(0) {
				fr[f]++
			}
			d.tf[t.key] = fr
		}
		d.len[f] = len(buf)
	}
	add(fieldName, e.Name, e.Title)
	add(fieldTags, e.Tags...)
	add(fieldServer, e.Server)
	add(fieldDescription, e.Description)
	params := make([]string, 0, 2*len(e.Params))
	for _, p := range e.Params {
		params = append(params, p.Name, p.Description)
	}
	add(fieldParams, params...)
	return d
}
