// Package browser opens a link for the person using mcpvisor (a login's
// authorization page, a server's elicitation URL): it reads $BROWSER as
// xdg-open and Python's webbrowser do ([Commands]), refuses anything but
// http and https URLs ([CheckURL]) and starts the command ([Start]).
//
// # Processes
//
// A browser command runs in its own process group, so that a Ctrl-C at
// the terminal (which signals the terminal's foreground group) is not
// for it, and without mcpvisor's stdin, stdout or stderr. [Start] gives
// each command one goroutine that waits for it to exit and reaps it; it
// ends when the command does, which for a browser that keeps running
// (one named directly in $BROWSER rather than through xdg-open) may be
// after the caller is done with it. [Process.Done] says when it has.
package browser
