// Package textsafe makes text that mcpvisor did not write safe to show on a
// terminal. A server controls its tool names, its results, its error
// messages and its stderr; shown raw, an escape sequence in any of them
// could clear the screen, retitle the window or write the clipboard, and a
// bidirectional override or a zero-width character could make one name look
// like another. The functions here rewrite every such character as a
// visible escape (`\x1b`, `\u202e`) and leave all other text — letters of
// any script, emoji, punctuation — as it is.
//
// Which characters are escaped is decided by Unicode categories, not by a
// list: control characters (C0, DEL and C1), format characters (bidi
// embeddings, overrides and isolates, zero-width spaces and joiners, the
// byte-order mark, tag characters), the line and paragraph separators, and
// bytes that are not UTF-8. One exception keeps emoji whole: a zero-width
// joiner between two pictographs (👩‍💻) is part of the emoji, not a hidden
// character, and stays.
//
// A backslash is left alone, so text that already holds `\x1b` as four
// characters looks the same as an escaped ESC; the aim is that nothing is
// interpreted, not that the display can be decoded.
//
// The package sits below everything else (it imports only the standard
// library), so the command, the Lua runtime and the HUD share it.
package textsafe
