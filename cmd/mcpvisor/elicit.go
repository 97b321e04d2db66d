package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/chzyer/readline"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// terminalPrompter asks the person at the REPL what a server asks
// (elicitation) when no Lua handler answers: a form one field at a time, or
// a URL to open. It answers only while the REPL runs: the REPL attaches its
// console on start and detaches it when it ends.
type terminalPrompter struct {
	console atomic.Pointer[console]
	// browser is $BROWSER, read when a URL is to be opened.
	browser func() string
}

var _ luaapi.Prompter = (*terminalPrompter)(nil)

func newTerminalPrompter() *terminalPrompter {
	return &terminalPrompter{browser: func() string { return os.Getenv("BROWSER") }}
}

// attach makes c the terminal questions are asked on; nil detaches.
func (p *terminalPrompter) attach(c *console) { p.console.Store(c) }

// Elicit takes the REPL's terminal, once no other question has it, and
// asks. Without a REPL it returns ask.ErrNoAnswer.
func (p *terminalPrompter) Elicit(ctx context.Context, from ask.From, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c := p.console.Load()
	if c == nil {
		return nil, fmt.Errorf("%w: the REPL is not running", ask.ErrNoAnswer)
	}
	t, err := c.take(ctx)
	if errors.Is(err, errConsoleClosed) {
		return nil, fmt.Errorf("%w: the REPL has ended", ask.ErrNoAnswer)
	}
	if err != nil {
		return nil, err
	}
	defer t.done()
	return elicit(ctx, t, from, params, func(target string) ([]string, error) { return openURL(p.browser(), target) })
}

// questioner is what a question needs of the terminal: somewhere to print
// and the person's next line. A console turn is one.
type questioner interface {
	io.Writer
	readLine(ctx context.Context, prompt string) (string, error)
}

// opener opens a URL for the person and returns the command it used.
type opener func(target string) ([]string, error)

// elicit asks params on q: a form or a URL. Ctrl-C or Ctrl-D declines; when
// ctx ends first (the server stopped waiting) it says so and returns the
// cause.
func elicit(ctx context.Context, q questioner, from ask.From, params *mcp.ElicitParams, open opener) (*mcp.ElicitResult, error) {
	url := ask.Mode(params) == "url"
	who := `server "` + textsafe.Line(from.Server) + `"`
	if from.Client != "" {
		who += ` (for client "` + textsafe.Line(from.Client) + `")`
	}
	var res *mcp.ElicitResult
	var err error
	if url {
		fmt.Fprintf(q, "── %s asks you to open a link ──\n", who)
		res, err = askURL(ctx, q, params, open)
	} else {
		fmt.Fprintf(q, "── %s asks ──\n", who)
		res, err = askForm(ctx, q, params)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(q, "── %s stopped waiting ──\n", who)
		return nil, context.Cause(ctx)
	case err != nil:
		return nil, err
	case res.Action == "accept":
		fmt.Fprintf(q, "── sent to %s ──\n", who)
	default:
		fmt.Fprintf(q, "── declined ──\n")
	}
	return res, nil
}

// declined reports whether err is the person declining: Ctrl-C or Ctrl-D.
func declined(err error) bool {
	return errors.Is(err, readline.ErrInterrupt) || errors.Is(err, io.EOF)
}

// decline is the answer of a person who declined.
func decline() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }

// askForm asks each field of the form in turn, again after an invalid
// answer, and accepts with the answers.
func askForm(ctx context.Context, q questioner, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	fields, err := formFields(params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	if params.Message != "" {
		fmt.Fprintln(q, textsafe.Block(params.Message))
	}
	fmt.Fprintln(q, "(Enter keeps the [default] or leaves an optional field out; Ctrl-C declines.)")
	content := map[string]any{}
	for _, f := range fields {
		if f.description != "" {
			fmt.Fprintln(q, "  "+textsafe.Block(f.description))
		}
		if len(f.choices) > 0 {
			var list []string
			for i, c := range f.choices {
				list = append(list, fmt.Sprintf("%d) %s", i+1, textsafe.Line(c.label)))
			}
			fmt.Fprintln(q, "  "+strings.Join(list, "  "))
		}
		for {
			line, err := q.readLine(ctx, f.prompt())
			if declined(err) {
				return decline(), nil
			}
			if err != nil {
				return nil, err
			}
			v, err := f.parse(line)
			if errors.Is(err, errSkip) {
				break
			}
			if err != nil {
				fmt.Fprintf(q, "  ✗ %s\n", textsafe.Line(err.Error()))
				continue
			}
			content[f.name] = v
			break
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// askURL shows the link, opens it with $BROWSER when set, and asks whether
// the person is done: yes accepts, anything else declines.
func askURL(ctx context.Context, q questioner, params *mcp.ElicitParams, open opener) (*mcp.ElicitResult, error) {
	if params.Message != "" {
		fmt.Fprintln(q, textsafe.Block(params.Message))
	}
	fmt.Fprintln(q, "  "+textsafe.Line(params.URL))
	switch argv, err := open(params.URL); {
	case errors.Is(err, errNoBrowser):
		fmt.Fprintln(q, "(Open it in your browser; $BROWSER, when set, opens it for you.)")
	case err != nil:
		fmt.Fprintf(q, "(Not opened: %s.)\n", textsafe.Line(err.Error()))
	default:
		fmt.Fprintf(q, "(Opened with %s.)\n", textsafe.Line(argv[0]))
	}
	line, err := q.readLine(ctx, "Done? [y/N]: ")
	if declined(err) {
		return decline(), nil
	}
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	return decline(), nil
}
