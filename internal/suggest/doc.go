// Package suggest finds the names a mistyped one was probably meant to be,
// for the "did you mean" of error messages: an unknown spec field, tool,
// server or argument.
//
// Distances are the optimal string alignment distance (insertions,
// deletions, substitutions and swaps of adjacent letters each cost one),
// compared case-insensitively; a candidate is plausible when it is within
// a third of the name's length. It is written here rather than taken from
// a library because it is thirty lines and the closeness rule is ours.
package suggest
