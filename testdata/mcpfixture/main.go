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
//	spawn-setsid start a grandchild "sleep" in a session of its own (setsid)
//
// -progress adds a tool progress that sends {"steps": N} notifications/progress
// (when the call carries a progress token) before it answers; with
// "acked": true it waits for a call of progress_ack after each one, so a test
// can see every report arrive before the result.
//
// -client adds tools that use the client's features: log (a
// notifications/message at each MCP level, then a long one with control
// characters), elicit, sample and roots (elicitation/create,
// sampling/createMessage and roots/list, answering with what the client
// said). Run it with -protocol 2025-11-25: from 2026-07-28 on, a server may
// not send requests of its own while serving one.
//
// -http ADDR -stateless serves stateless Streamable HTTP (the 2026-07-28
// era: no sessions, no ping); -protocol VERSION narrows the protocol
// versions the server negotiates to one (e.g. 2025-06-18, where ping is the
// health check).
//
// -start-delay D waits D before serving (over stdio before reading stdin,
// with -http before listening), as a server that is slow to come up: over
// HTTP, connections are refused until then.
//
// With -once FILE the -mode fault applies only to the first process started
// with that FILE (it creates it), so a restarted server comes up healthy.
//
// -proc adds the tool proc_view (proc.go): how the server sees its PID
// namespace through /proc.
//
// -faults adds tools that inject a fault while serving, for supervision
// tests: freeze (the server deadlocks: nothing answers any more), garbage (writes a line that is not JSON-RPC to stdout),
// close_stdout (closes stdout and keeps running), hang (never answers, ignoring
// cancellation), add_tool / remove_tool (change the tool list, which sends
// notifications/tools/list_changed) and stats (calls served and calls
// cancelled by the client, as structured content). -crash-after N exits
// the process with status 9 when the (N+1)th tools/call arrives.
package main

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"bufio"
	"context"
	"encoding/json"
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
	"sync"
	"sync/atomic"
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

var (
	extra      = flag.Bool("extra", false, "add the tools nested, badout, badschema and delete_all")
	faults     = flag.Bool("faults", false, "add the fault tools freeze, garbage, close_stdout, hang, add_tool, remove_tool, stats")
	crashAfter = flag.Int("crash-after", 0, "exit with status 9 when tools/call number N+1 arrives (0: never)")
	progress   = flag.Bool("progress", false, "add the tool progress (sends notifications/progress before it answers)")
	stateless  = flag.Bool("stateless", false, "with -http: serve stateless Streamable HTTP (protocol 2026-07-28, no sessions)")
	client     = flag.Bool("client", false, "add the tools log, elicit, sample and roots, which use the client's features (use with -protocol 2025-11-25)")
	templates  = flag.Bool("templates", false, "add the resource template fixture://item/{id} and answer completion/complete for the greeting prompt's name and the template's id")
	protocol   = flag.String("protocol", "", "negotiate only this protocol version (e.g. 2025-06-18); default: all the go-sdk speaks")
	describe   = flag.String("describe", "", "read the echo tool's description from this file at start (a definition that changes between restarts)")
	startDelay = flag.Duration("start-delay", 0, "wait this long before serving: over stdio before reading stdin, with -http before listening (a server slow to come up)")

	calls, cancelled atomic.Int64
)

type nameArgs struct {
	Name string `json:"name"`
}

func addFaults(s *mcp.Server) {
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "freeze", Description: "Deadlock the server: nothing is answered any more."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			// Holding the stdout lock forever blocks every answer, pings
			// included, as a deadlocked server would. (Not SIGSTOP: the
			// kernel sends SIGCONT to a stopped process group that becomes
			// orphaned, which happens when the thread that forked us exits.)
			log.Print("freezing: no more answers")
			stdoutMu.Lock()
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage", Description: "Write a line that is not JSON-RPC to stdout."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			stdoutMu.Lock()
			fmt.Fprintln(os.Stdout, "oops: this is not JSON-RPC")
			stdoutMu.Unlock()
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "close_stdout", Description: "Close stdout and keep running."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			log.Print("closing stdout")
			stdoutMu.Lock()
			os.Stdout.Close()
			stdoutMu.Unlock()
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer, even when cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool that echoes its name."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
			name := in.Name
			s.AddTool(&mcp.Tool{Name: name, Description: "Added at run time.", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(name), nil })
			return text("added " + name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "remove_tool", Description: "Remove a tool."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
			s.RemoveTools(in.Name)
			return text("removed " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stats", Description: "Calls served and calls cancelled by the client."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]int64, error) {
			return nil, map[string]int64{"calls": calls.Load(), "cancelled": cancelled.Load(), "pid": int64(os.Getpid())}, nil
		})
}

// count counts tool calls (and crashes on request, see -crash-after) and
// the calls whose handler saw the client cancel them.
func count(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		n := calls.Add(1)
		if *crashAfter > 0 && n > int64(*crashAfter) {
			log.Printf("crashing at call %d as asked (-crash-after %d)", n, *crashAfter)
			os.Exit(9)
		}
		res, err := next(ctx, method, req)
		if ctx.Err() != nil {
			cancelled.Add(1)
			log.Printf("call %d cancelled by the client", n)
		}
		return res, err
	}
}

// progressAcks carries progress_ack calls to the progress tool.
var progressAcks = make(chan struct{}, 100)

// stdoutMu keeps the fault tools' writes to stdout from splitting a message.
var stdoutMu sync.Mutex

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
	opts := hostileOptions()
	if *protocol != "" {
		if opts == nil {
			opts = &mcp.ServerOptions{}
		}
		opts.SupportedProtocolVersions = []string{*protocol}
	}
	if *templates {
		if opts == nil {
			opts = &mcp.ServerOptions{}
		}
		opts.CompletionHandler = complete
	}
	s := mcp.NewServer(hostileImplementation(&mcp.Implementation{Name: "mcpfixture", Version: "1.0.0"}), opts)
	s.AddReceivingMiddleware(count)
	addHostile(s)
	if *extra {
		addExtra(s)
	}
	if *faults {
		addFaults(s)
	}
	if *client {
		addClientTools(s)
	}
	if *procView {
		addProcView(s)
	}
	if *templates {
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fixture://item/{id}", Name: "item", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + strings.TrimPrefix(req.Params.URI, "fixture://item/")}}}, nil
			})
	}
	if *progress {
		mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report progress steps times (when asked to), then answer; with acked, wait for a progress_ack call after each report."},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct {
				Steps int  `json:"steps"`
				Acked bool `json:"acked,omitempty"`
			}) (*mcp.CallToolResult, any, error) {
				token := req.Params.GetProgressToken()
				for i := 1; i <= in.Steps && token != nil; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
						Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)}); err != nil {
						return nil, nil, err
					}
					if in.Acked {
						select {
						case <-progressAcks:
						case <-ctx.Done():
							return nil, nil, ctx.Err()
						}
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done; token %v", token)}}}, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "progress_ack", Description: "Let a progress call with acked go on to its next step."},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				progressAcks <- struct{}{}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "acked"}}}, nil, nil
			})
	}
	echoDesc := "Echo the text back."
	if *describe != "" {
		// A server that changes a tool's definition between restarts
		// (tool-definition pinning's tests).
		if b, err := os.ReadFile(*describe); err == nil {
			echoDesc = string(b)
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: echoDesc},
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
	once := flag.String("once", "", "apply -mode only if this file does not exist yet (and create it)")
	flag.Parse()
	if *once != "" && *mode != "" {
		f, err := os.OpenFile(*once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			*mode = "" // not the first start: serve normally
		} else {
			f.Close()
		}
	}
	log.SetFlags(0)
	log.SetPrefix("mcpfixture: ")
	log.Printf("starting (mode=%q)", *mode)
	if *startDelay > 0 {
		time.Sleep(*startDelay)
	}

	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			log.Fatal(err)
		}
		// Tell the test where we listen.
		fmt.Println(ln.Addr().String())
		srv := newServer()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: *stateless})
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
	case "spawn-setsid":
		// A grandchild that leaves the process group (and session), as a
		// daemonizing helper does: killing the group does not reach it.
		c := exec.Command("sleep", "300")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		log.Printf("grandchild pid %d (setsid)", c.Process.Pid)
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{lockedWriter{os.Stdout}}}
	if err := newServer().Run(context.Background(), t); err != nil {
		log.Printf("server stopped: %v", err)
	}
}

type blockForever struct{}

func (blockForever) Read([]byte) (int, error) { select {} }

type nopWriteCloser struct{ io.Writer }

type lockedWriter struct{ w io.Writer }

func (l lockedWriter) Write(p []byte) (int, error) {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	return l.w.Write(p)
}

func (nopWriteCloser) Close() error { return nil }

// complete answers completion/complete: for the greeting prompt's name
// and the item template's id, the candidates that start with the value
// typed so far, with the ref echoed as the first value ("prompt:NAME" or
// "resource:URI") so that a test can see what reached the server.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	var cands []string
	switch {
	case ref.Type == "ref/prompt" && ref.Name == "greeting" && req.Params.Argument.Name == "name":
		cands = []string{"alice", "albert", "bob"}
	case ref.Type == "ref/resource" && ref.URI == "fixture://item/{id}" && req.Params.Argument.Name == "id":
		cands = []string{"1", "12", "2"}
	default:
		return nil, fmt.Errorf("nothing to complete for %s %s%s argument %q", ref.Type, ref.Name, ref.URI, req.Params.Argument.Name)
	}
	echo := "prompt:" + ref.Name
	if ref.Type == "ref/resource" {
		echo = "resource:" + ref.URI
	}
	values := []string{echo}
	for _, c := range cands {
		if strings.HasPrefix(c, req.Params.Argument.Value) {
			values = append(values, c)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}

// addClientTools adds tools that ask the client for something: log sends a
// notifications/message at each MCP level; elicit, sample and roots send
// elicitation/create, sampling/createMessage and roots/list, and answer
// with what the client said.
func addClientTools(s *mcp.Server) {
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Send one log notification at each MCP level (and a long one with control characters at error)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for _, l := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "fixture", Data: "message at " + string(l)}); err != nil {
					return nil, nil, err
				}
			}
			evil := "forged\n[ERROR] line\x1b[31m" + strings.Repeat("x", 10000)
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "evil", Data: evil}); err != nil {
				return nil, nil, err
			}
			return text("logged"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit", Description: "Ask the client for a name, an age and an api_token; answer with its action and content."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":      map[string]any{"type": "string", "description": "your name"},
					"age":       map[string]any{"type": "integer"},
					"api_token": map[string]any{"type": "string"},
				},
				"required": []any{"name"},
			}})
			if err != nil {
				return nil, nil, err
			}
			b, _ := json.Marshal(res.Content)
			return text(fmt.Sprintf("action=%s content=%s", res.Action, b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit_schema", Description: "Ask the client to fill the requested schema given as the argument schema; answer with its action and content, or the error."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Schema map[string]any `json:"schema"`
		}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Choose", RequestedSchema: in.Schema})
			if err != nil {
				return text("error: " + err.Error()), nil, nil
			}
			b, _ := json.Marshal(res.Content)
			return text(fmt.Sprintf("action=%s content=%s", res.Action, b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Ask the client's LLM to complete a prompt; answer with its model and text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Prompt string `json:"prompt"`
		}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 16,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}})
			if err != nil {
				return nil, nil, err
			}
			t, _ := res.Content.(*mcp.TextContent)
			if t == nil {
				return nil, nil, fmt.Errorf("sampling result is not text")
			}
			return text(fmt.Sprintf("model=%s text=%s", res.Model, t.Text)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "List the client's roots; answer with their URIs, comma-separated."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, ",")), nil, nil
		})
}
