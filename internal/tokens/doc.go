// Package tokens estimates how many tokens a text, or a tool's definition,
// costs a model: the figure that tells what listing a catalogue of tools
// costs on every model turn, and what an exposure mode saves.
//
// The count is real, not a characters-per-token guess: text is encoded
// with OpenAI's o200k_base byte-pair encoding (the vocabulary of GPT-4o and
// its successors), compiled into the binary, so nothing is downloaded at
// run time. Other vendors' tokenizers (Anthropic's is not published) split
// text differently, usually by a few tens of percent; the figures are
// therefore estimates, good for comparing catalogues and modes with each
// other, not for billing.
//
// A tool's cost is that of its definition as a client receives it in
// tools/list: the compact JSON of the tool (name, title, description,
// input and output schema, annotations). How a client renders tools into
// its prompt adds a little framing per tool that is not counted.
//
// The vocabulary is built the first time a count is asked for (a few
// hundred milliseconds, once per process); a program that never counts
// never pays for it. Encoding runs at roughly a megabyte a second, so a
// text longer than [ExactBytes] is counted on its first ExactBytes and
// extrapolated, which keeps a hostile server's megabyte description from
// stalling whoever asks.
//
// # Concurrency
//
// Count, Tool and a [Cache]'s methods may be called from any goroutine. A
// Cache's mutex guards its map only; no counting happens under it.
package tokens
