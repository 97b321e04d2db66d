package toolsearch

// synonyms maps a word to the words it stands for, on both sides: a tool
// that says "repo" is found by "repository" and the other way round.
// These are the abbreviations and near-synonyms of tool catalogues that
// stemming cannot join; the list is short on purpose, since every entry
// also merges meanings that a user might want apart. Keys and values are
// stemmed before use, so "repos" and "folders" are covered too.
var synonyms = map[string][]string{
	"repo":    {"repository"},
	"dir":     {"directory"},
	"folder":  {"directory"},
	"pr":      {"pull", "request"},
	"prs":     {"pull", "request"},
	"mr":      {"merge", "request"},
	"mrs":     {"merge", "request"},
	"msg":     {"message"},
	"db":      {"database"},
	"config":  {"configuration"},
	"cfg":     {"configuration"},
	"info":    {"information"},
	"img":     {"image"},
	"picture": {"image"},
	"photo":   {"image"},
	"k8s":     {"kubernetes"},
	"env":     {"environment"},
	"remove":  {"delete"},
	"rm":      {"delete"},
	"del":     {"delete"},
	"erase":   {"delete"},
	"ls":      {"list"},
}

// stemSynonyms is synonyms with keys and values stemmed.
var stemSynonyms = func() map[string][]string {
	m := make(map[string][]string, len(synonyms))
	for k, v := range synonyms {
		keys := make([]string, len(v))
		for i, w := range v {
			keys[i] = stem(w)
		}
		m[stem(k)] = keys
	}
	return m
}()
