package rawrpc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

func TestIsNotice(t *testing.T) {
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`:  true,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`:         true,
		`{"jsonrpc":"2.0","METHOD":"notifications/progress","params":{}}`:                          true, // keys match as encoding/json matches them
		`{"jsonrpc":"2.0","method":"notifications\/message","params":{}}`:                          true, // an escaped slash is the same method
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`:                            false,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/message","params":{}}`:                    false, // a request, not a notification
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"notifications/x"}]}}`: false,
		`{"jsonrpc":"2.0","method":"notifications/message"`:                                        false, // cut short
		`{"jsonrpc":"2.0","method":"ping"}`:                                                        false,
	} {
		assert.Equal(t, want, rawrpc.IsNotice([]byte(msg)), msg)
	}
}
