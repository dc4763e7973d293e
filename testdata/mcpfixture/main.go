// Command mcpfixture is toolhost's fixture MCP server, written with the go-sdk.
// Tests and the bundled default configuration run it over stdio (the default)
// or Streamable HTTP (-http ADDR).
//
// Tools: echo, add (structured content), sleep (honours cancellation), fail
// (an isError result), big (a result of N bytes), crash (exits the process
// mid-call). One resource (fixture://readme) and one prompt (greeting).
//
// -extra adds tools for the host's schema checks: nested (a nested object
// argument), badout (structured content that does not match its
// outputSchema), badschema (an inputSchema that does not compile) and
// delete_all (a tool a policy should deny).
//
// -mode injects a fault at start-up:
//
//	garbage     write a line that is not JSON-RPC to stdout, then serve
//	exit-init   exit with status 3 as soon as the initialize request arrives
//	hang        read stdin but never answer
//	ignore-term ignore SIGTERM (Close must escalate to SIGKILL)
//	spawn       start a grandchild "sleep" in the same process group
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

type addArgs struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type sleepArgs struct {
	Ms int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type bigArgs struct {
	Bytes int `json:"bytes" jsonschema:"size of the text result in bytes"`
}

type failArgs struct {
	Message string `json:"message,omitempty"`
}

type nestedArgs struct {
	User struct {
		Name string `json:"name"`
		Age  int    `json:"age"`
	} `json:"user"`
	Tags []string `json:"tags,omitempty"`
}

var extra = flag.Bool("extra", false, "add the tools nested, badout, badschema and delete_all")

func addExtra(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "nested", Description: "Greet a user given as a nested object."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nestedArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s is %d", in.User.Name, in.User.Age)}}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "badout", Description: "Structured content that breaks its own outputSchema.",
		InputSchema:  map[string]any{"type": "object"},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"sum": map[string]any{"type": "number"}}, "required": []any{"sum"}}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sum":"many"}`}}, StructuredContent: map[string]any{"sum": "many"}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "badschema", Description: "An inputSchema that does not compile.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "nope"}}}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "badschema ran"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "delete_all", Description: "Pretends to delete everything.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted everything"}}}, nil
		})
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfixture", Version: "1.0.0"}, nil)
	if *extra {
		addExtra(s)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers; the sum is structured content."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep for ms milliseconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("slept %dms", in.Ms)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Return a tool error result."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in failArgs) (*mcp.CallToolResult, any, error) {
			msg := in.Message
			if msg == "" {
				msg = "failed as asked"
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return a text result of the given size."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process with status 7 mid-call."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing as asked")
			os.Exit(7)
			return nil, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "fixture://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "fixture readme"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greeting", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}}}}, nil
		})
	return s
}

func main() {
	mode := flag.String("mode", "", "fault to inject: garbage, exit-init, hang, ignore-term, spawn")
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mcpfixture: ")
	log.Printf("starting (mode=%q)", *mode)

	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			log.Fatal(err)
		}
		// Tell the test where we listen.
		fmt.Println(ln.Addr().String())
		srv := newServer()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		log.Fatal(http.Serve(ln, h))
	}

	var stdin io.Reader = os.Stdin
	switch *mode {
	case "garbage":
		fmt.Println("Server ready! (this banner is not JSON-RPC)")
	case "exit-init":
		r := bufio.NewReader(os.Stdin)
		_, _ = r.ReadString('\n')
		log.Print("exiting during initialize")
		os.Exit(3)
	case "hang":
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {}
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		// Keep running even after stdin closes.
		stdin = io.MultiReader(os.Stdin, blockForever{})
	case "spawn":
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		log.Printf("grandchild pid %d", c.Process.Pid)
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{os.Stdout}}
	if err := newServer().Run(context.Background(), t); err != nil {
		log.Printf("server stopped: %v", err)
	}
}

type blockForever struct{}

func (blockForever) Read([]byte) (int, error) { select {} }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
