// Package toolsearch finds tools by what they do, for clients that are
// offered a few meta-tools (search_tools, describe_tools, call_tool)
// instead of hundreds of tool definitions. It is the ranking core only: it
// knows nothing of endpoints, sessions or calls.
//
// # Model
//
// An [Index] holds one [Entry] per tool, keyed by the name the endpoint
// exposes it under. Each entry is analysed into five fields: the name (and
// title), the user's tags and aliases, the server's name, the description,
// and the parameters (names and descriptions, nested properties
// included). Text becomes terms by splitting on everything that is not a
// letter or digit and again at camelCase boundaries (keeping the whole
// word too: "GitHub" is github, git and hub), lower-casing, dropping
// English stop words and lone letters, stemming with the Snowball English
// stemmer, and joining a short list of abbreviations and synonyms (repo,
// dir/folder, PR, remove/delete; see synonyms.go).
//
// A query is analysed the same way (its first KiB, 32 distinct terms at
// most) and ranked with BM25F: each field has a weight (name and tags 3,
// server and description 1, parameters 0.5) and its own length
// normalisation, k1 = 1.2, and a term's IDF is over all tools. A query
// term of three letters or more also matches the terms it begins
// ("screen" → screenshot) at half weight. Ties are broken by name, so the
// same query over the same tools gives the same list. Each [Match] says
// which query words hit which fields ([Hit]).
//
// On the 341-tool test catalogue (testdata/catalogue.json: the reference
// servers' real tool lists plus look-alikes of popular servers) the 80
// labelled queries of testdata/queries.json find a wanted tool in the
// first five 79 times (recall@5 0.988, MRR 0.925). Each part earns its
// place: without prefix matching 0.975 / 0.907, with every field weighing
// the same 0.988 / 0.903, without synonyms 0.963 / 0.901.
//
// # Updates
//
// Changes are incremental: Add, Replace and Remove analyse only the tool
// they name, and Sync (the way to follow a catalogue: hand it every entry
// each time) analyses only the entries that differ from what the index
// holds. A change copies the term map and the posting lists of the terms
// the changed tools contain, never the other tools; batch changes with
// Sync rather than many single calls.
//
// # Concurrency
//
// Every change publishes a new immutable [Snapshot] atomically; Search
// reads the snapshot published last and never waits for a change, and a
// snapshot taken earlier stays valid and unchanged. Changes are
// serialised by the index's mutex, under which only the analysis of the
// changed tools runs. Any goroutine may call any method. Options.Allow is
// called on the searching goroutine.
//
// # Untrusted input
//
// Queries come from a model and entries from servers: both are read
// within bounds (query length and terms, words of 48 bytes at most, 1,024
// terms per field, 64 parameters to a depth of 4), and nothing in them
// can make a search fail other than a query with no words and no server
// (CodeEmptyQuery).
package toolsearch
