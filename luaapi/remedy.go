package luaapi

import (
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/manager"
)

// remedyWords says a manager's remedy as a Lua user acts on it: the call
// to make at the REPL or in a script. It is "" for no remedy.
func remedyWords(r manager.Remedy) string {
	switch r.Kind {
	case manager.RemedyRetry:
		return "try again later"
	case manager.RemedyWait:
		return fmt.Sprintf("the next attempt is %s, or mcp_reconnect(%q) to try now", in(r.At), r.Server)
	case manager.RemedyReconnect:
		return fmt.Sprintf("mcp_reconnect(%q) to try again", r.Server)
	case manager.RemedyEnable:
		return fmt.Sprintf("mcp_enable(%q) to connect it", r.Server)
	case manager.RemedyLogin:
		return fmt.Sprintf("log in with mcp_login(%q)", r.Server)
	case manager.RemedyCredentials:
		return fmt.Sprintf(`set the credentials it wants (headers = {Authorization = "Bearer ${TOKEN}"}), then mcp_reconnect(%q)`, r.Server)
	case manager.RemedyFixDeclaration:
		return fmt.Sprintf("fix its declaration, then mcp_reconnect(%q)", r.Server)
	case manager.RemedyRename:
		return fmt.Sprintf("use another name or mcp_remove(%q) first", r.Server)
	}
	return ""
}

// in says when t comes, from now: "in 4.2s", or "due now" once it has
// passed.
func in(t time.Time) string {
	d := time.Until(t).Round(100 * time.Millisecond)
	if d <= 0 {
		return "due now"
	}
	return "in " + d.String()
}

// luaErrorText is err's text with its remedy in Lua words.
func luaErrorText(err error) string {
	msg, _ := errorMessage(err)
	return msg
}

// errorMessage is err's text with the remedy its chain carries, in Lua
// words: what tostring(err) and err.message say.
func errorMessage(err error) (msg, remedy string) {
	msg = err.Error()
	if r, ok := manager.RemedyOf(err); ok {
		if remedy = remedyWords(r); remedy != "" {
			msg += "; " + remedy
		}
	}
	return msg, remedy
}
