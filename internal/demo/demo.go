package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the implementation name the demo server reports.
const Name = "mcpvisor-demo"

// Version is the implementation version the demo server reports.
const Version = "0.1.0"

// ReadmeURI is the URI of the demo's only resource.
const ReadmeURI = "demo://readme"

// MaxSleep bounds the sleep tool so that a typo cannot park a call for days.
const MaxSleep = 10 * time.Minute

// Readme is the text served for [ReadmeURI].
const Readme = `mcpvisor demo server

This is the MCP server built into mcpvisor. It exists so that you can try the
host without installing anything.

Tools:
  echo  {text}       returns text unchanged
  add   {a, b}       returns the integer sum as structured content {"sum": a+b}
  sleep {ms}         waits ms milliseconds, then answers "slept <ms>ms"
  fail  {message}    returns a tool error whose text is message

Prompts:
  greet {name}       a user message asking to say hello to name
`

// EchoInput is the input of the echo tool.
type EchoInput struct {
	Text string `json:"text" jsonschema:"the text to return unchanged"`
}

// AddInput is the input of the add tool.
type AddInput struct {
	A int64 `json:"a" jsonschema:"first addend"`
	B int64 `json:"b" jsonschema:"second addend"`
}

// AddOutput is the structured output of the add tool.
type AddOutput struct {
	Sum int64 `json:"sum" jsonschema:"a + b"`
}

// SleepInput is the input of the sleep tool.
type SleepInput struct {
	Ms int64 `json:"ms" jsonschema:"how long to wait, in milliseconds (0 to 600000)"`
}

// FailInput is the input of the fail tool.
type FailInput struct {
	Message string `json:"message" jsonschema:"the error message the tool returns"`
}

// NewServer returns the demo MCP server named "mcpvisor-demo".
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{
		Name:    Name,
		Title:   "mcpvisor demo server",
		Version: Version,
	}, &mcp.ServerOptions{
		Instructions: "A demo server built into mcpvisor. Read " + ReadmeURI + " for an overview.",
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Return the given text unchanged, as a single text content.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, echo)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add",
		Description: `Add two integers. Returns {"sum": a+b} as structured content and the sum as text.`,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, add)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "sleep",
		Description: "Wait for ms milliseconds (at most 600000), then answer \"slept <ms>ms\". Stops early with an error if the call is cancelled.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, sleep)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "fail",
		Description: "Always fail: returns a tool error (isError=true) whose text is the given message.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, fail)

	s.AddResource(&mcp.Resource{
		Name:        "readme",
		Title:       "Demo server README",
		Description: "What the demo server offers.",
		URI:         ReadmeURI,
		MIMEType:    "text/plain",
		Size:        int64(len(Readme)),
	}, readme)

	s.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Ask the model to greet someone.",
		Arguments: []*mcp.PromptArgument{
			{Name: "name", Description: "who to greet", Required: true},
		},
	}, greet)
	return s
}

// Serve runs the demo server over newline-delimited JSON on in/out until the
// peer closes in or ctx ends. A peer that closes the stream is a normal end
// and returns nil; a cancelled ctx returns ctx.Err(). Serve closes in and out
// before returning.
func Serve(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	if in == nil || out == nil {
		return errors.New("demo: Serve needs both an input and an output stream")
	}
	err := NewServer().Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if err != nil {
		return fmt.Errorf("demo server: %w", err)
	}
	return nil
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func echo(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: text(in.Text)}, nil, nil
}

func add(_ context.Context, _ *mcp.CallToolRequest, in AddInput) (*mcp.CallToolResult, AddOutput, error) {
	sum := in.A + in.B
	return &mcp.CallToolResult{Content: text(strconv.FormatInt(sum, 10))}, AddOutput{Sum: sum}, nil
}

func sleep(ctx context.Context, _ *mcp.CallToolRequest, in SleepInput) (*mcp.CallToolResult, any, error) {
	d := time.Duration(in.Ms) * time.Millisecond
	if in.Ms < 0 || d > MaxSleep {
		return nil, nil, fmt.Errorf("ms must be between 0 and %d, got %d", MaxSleep.Milliseconds(), in.Ms)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("slept %dms", in.Ms))}, nil, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("sleep interrupted: %w", context.Cause(ctx))
	}
}

func fail(_ context.Context, _ *mcp.CallToolRequest, in FailInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{IsError: true, Content: text(in.Message)}, nil, nil
}

func readme(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != ReadmeURI {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI:      ReadmeURI,
		MIMEType: "text/plain",
		Text:     Readme,
	}}}, nil
}

func greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	if name == "" {
		return nil, errors.New(`greet: argument "name" is required`)
	}
	return &mcp.GetPromptResult{
		Description: "Greet " + name,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: "Say hello to " + name + "."},
		}},
	}, nil
}
