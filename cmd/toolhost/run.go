package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/jsonx"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/termsafe"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1 // the tool ran and returned isError
	exitUsage     = 2 // bad flags or configuration
	exitCallError = 3 // the call could not be made
	exitDenied    = 4 // the policy refused the call (host.ErrToolNotAllowed)
)

// defaultConfig is used when --config is not given and TOOLHOST_CONFIG is
// unset: the toolhost.toml of the working directory (the repository's bundled
// default configuration when run from its root).
const defaultConfig = "toolhost.toml"

const usage = `Usage: toolhost [--config PATH] [--log-level LEVEL] COMMAND [flags]

Commands:
  tools [--profile NAME] [--json]
                                 list the catalogue of tools (as the policy, or a profile, allows)
  call NAME [--args JSON|@FILE|-] [--profile NAME] [--json]
                                 call a tool and print its result ('toolhost call --help')
  status [--json] [--watch D]    start every backend and show its state (every D until interrupted)
  check [--profile NAME]         validate the configuration (also: plugin files and their declared
                                 memory, server commands in PATH) and show what would load;
                                 with --profile, start the backends and show the profile's
                                 catalogue and the rule that excludes each other tool
  inspect PLUGIN.wasm [--json]   show a plugin's ABI, tools and imports, with no capabilities
  prewarm                        compile every plugin into the compilation cache and cache its
                                 tool list, in parallel, so that tools, call and serve start warm
  prompts [--profile NAME] [--json]
                                 list the prompts (as the policy, or a profile, allows)
  prompt NAME [--args JSON] [--profile NAME] [--json]
                                 render a prompt with its arguments (a JSON object of strings)
  resources [--profile NAME] [--json]
                                 list the resources (as the policy, or a profile, allows)
  read URI [--backend NAME] [--profile NAME] [--json]
                                 read a resource (--backend when no backend, or several, list URI)
  login NAME [--no-browser] [--timeout D]
                                 log in to the OAuth server NAME ([servers.NAME.oauth]) in a browser
                                 (or $BROWSER) and store its token; logout NAME deletes it
  audit key | rotate-key         show, or replace with a new random one, the key of the audit
                                 log's args_hmac (this installation's; 'toolhost audit --help')
  serve [--stdio | --listen ADDR] [--profile NAME] [--allow-unauthenticated]
                                 serve the catalogue as an MCP server: on stdin/stdout, or over
                                 Streamable HTTP at http://ADDR/mcp (default [serve] listen,
                                 127.0.0.1:8808); [serve.clients.NAME] tokens select profiles

Global flags (before or after the command):
  --config PATH     configuration file (default $TOOLHOST_CONFIG, else ./toolhost.toml)
  --log-level LEVEL trace, debug, info, warn (default), error or off; logs go to stderr

Exit status: 0 ok, 1 tool returned an error result (also: arguments that do not match its
inputSchema), 2 usage or configuration error (also: --args not a JSON object, unknown profile),
3 call failed (unknown tool, backend unavailable, timeout; for tools: no backend is ready),
4 call denied by the policy or the profile (also: a prompt or resource).
`

type cli struct {
	stdout, stderr io.Writer
	cfg            *config.Config         // the configuration withHost loaded
	audit          func(host.AuditRecord) // host.Options.Audit of withHost's Host
	configPath     string
	logLevel       string
	logger         hclog.Logger
	serving        bool // toolhost serve: no elicitation on stdin
	// prepare, when set, adjusts the loaded configuration before withHost
	// builds its Host (call: start only the backends the call needs).
	prepare func(cfg *config.Config)
	// callOnly, set by call, makes withHost not wait in host.New for the
	// backends' first start: the call's one deadline, from the command's
	// start, covers that wait (the host's resolve layer waits for a
	// backend coming up within it), so a backend slower to start than its
	// timeout fails the call at the timeout, not after its start.
	callOnly bool
	// hostOpts, when set, adjusts withHost's host.Options.
	hostOpts func(opts *host.Options)
}

// run is the whole CLI: it parses args (without the program name), writes to
// stdout and stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("toolhost", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.configPath, "config", "", "")
	fs.StringVar(&c.logLevel, "log-level", "warn", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		return c.usageError(err.Error())
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	// Global flags are accepted after the command too, as users type them
	// (toolhost check --config x.toml).
	rest, err := c.globalsAfter(fs.Args()[1:])
	if err != nil {
		return c.usageError(err.Error())
	}
	level := hclog.LevelFromString(c.logLevel)
	if level == hclog.NoLevel {
		return c.usageError(fmt.Sprintf("unknown --log-level %q", c.logLevel))
	}
	c.logger = hclog.New(&hclog.LoggerOptions{Name: "toolhost", Level: level, Output: stderr})

	cmd := fs.Arg(0)
	switch cmd {
	case "tools":
		return c.tools(rest)
	case "call":
		return c.call(rest)
	case "status":
		return c.status(rest)
	case "check":
		return c.check(rest)
	case "inspect":
		return c.inspect(rest)
	case "prompts":
		return c.prompts(rest)
	case "prompt":
		return c.prompt(rest)
	case "resources":
		return c.resources(rest)
	case "read":
		return c.read(rest)
	case "serve":
		return c.serve(rest)
	case "login":
		return c.login(rest)
	case "logout":
		return c.logout(rest)
	case "prewarm":
		return c.prewarm(rest)
	case "audit":
		return c.auditCmd(rest)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return c.usageError(fmt.Sprintf("unknown command %q", cmd))
}

// subcommandValueFlags are the subcommands' flags that take a value (so the
// word after them is not read as a global flag).
var subcommandValueFlags = map[string]bool{"args": true, "profile": true, "watch": true, "timeout": true}

// globalsAfter takes the global flags (--config, --log-level; one or two
// dashes, "=VALUE" or a separate word) out of a subcommand's arguments,
// sets them, and returns the rest. It stops at "--".
func (c *cli) globalsAfter(args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		var dst *string
		switch name {
		case "config":
			dst = &c.configPath
		case "log-level":
			dst = &c.logLevel
		default:
			rest = append(rest, a)
			if subcommandValueFlags[name] && !hasValue && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			value = args[i]
		}
		*dst = value
	}
	return rest, nil
}

func (c *cli) usageError(msg string) int {
	fmt.Fprintf(c.stderr, "toolhost: %s\nRun 'toolhost help' for usage.\n", msg)
	return exitUsage
}

// parse parses a subcommand's flags, allowing them before and after its
// positional arguments, and returns the positionals.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func (c *cli) loadConfig() (*config.Config, int) {
	path := c.configPath
	if path == "" {
		path = os.Getenv("TOOLHOST_CONFIG")
	}
	if path == "" {
		path = defaultConfig
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && c.configPath == "" {
			fmt.Fprintf(c.stderr, "toolhost: no configuration: %s not found; pass --config PATH or set TOOLHOST_CONFIG\n", path)
			return nil, exitUsage
		}
		fmt.Fprintf(c.stderr, "toolhost: invalid configuration:\n%v\n", err)
		return nil, exitUsage
	}
	return cfg, exitOK
}

// withHost loads the configuration, starts a Host, runs f and closes the
// Host. SIGINT and SIGTERM cancel f's context.
func (c *cli) withHost(f func(ctx context.Context, h *host.Host) int) int {
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	c.cfg = cfg
	if c.prepare != nil {
		c.prepare(cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := &host.Options{Logger: c.logger, Audit: c.audit}
	if c.serving {
		// Requests of a server go to the gateway's client that made the
		// call (stdin may be the protocol).
		opts.Elicit, opts.Sample, opts.ListRoots = gateway.Elicit, gateway.Sample, gateway.Roots
	} else {
		// Servers may ask the user for input on a terminal.
		opts.Elicit = (&elicitor{stderr: c.stderr}).elicit
	}
	if c.hostOpts != nil {
		c.hostOpts(opts)
	}
	// New waits for the eager backends' first start until its ctx is done;
	// a call does not wait there (callOnly).
	newCtx := ctx
	if c.callOnly {
		var cancel context.CancelFunc
		newCtx, cancel = context.WithCancel(ctx)
		cancel()
	}
	h, err := host.New(newCtx, cfg, opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	defer func() {
		if err := h.Close(); err != nil {
			c.logger.Warn("close", "error", err)
		}
	}()
	// The host logs each start failure at Error level; say it here only
	// when --log-level hides that, so that it is printed once.
	if !c.logger.IsError() {
		for _, st := range h.Status() {
			if st.State == host.StateFailed || st.State == host.StateRestarting {
				fmt.Fprintf(c.stderr, "toolhost: warning: backend %s failed to start (%s): %s\n", st.Name, st.State, esc(st.LastError))
			}
		}
	}
	for _, st := range h.Status() {
		if st.State == host.StateNeedsLogin {
			fmt.Fprintf(c.stderr, "toolhost: warning: backend %s needs an OAuth login: run `toolhost login %s`\n", st.Name, st.Name)
		}
	}
	return f(ctx, h)
}

// catalogue is what tools, call, prompts, prompt, resources and read use:
// the Host itself or a profile's View.
type catalogue interface {
	Tools(ctx context.Context) ([]host.Tool, error)
	CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error)
	Prompts(ctx context.Context) ([]host.Prompt, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Resources(ctx context.Context) ([]host.Resource, error)
	ReadResource(ctx context.Context, backend, uri string) (*mcp.ReadResourceResult, error)
}

// view returns the Host, or the View of profile when it is not empty.
func (c *cli) view(h *host.Host, profile string) (catalogue, int) {
	if profile == "" {
		return h, exitOK
	}
	v, err := h.Profile(profile)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return nil, exitUsage
	}
	return v, exitOK
}

// listing runs a listing command (tools, prompts, resources): it takes
// --profile NAME and --json and no positional argument, and runs f on the
// view of the profile.
func (c *cli) listing(name string, args []string, f func(ctx context.Context, h *host.Host, v catalogue, asJSON bool) int) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError("usage: toolhost " + name + " [--profile NAME] [--json]")
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		return f(ctx, h, v, *asJSON)
	})
}

func (c *cli) tools(args []string) int {
	// Listing needs no plugin instance: plugins listed from the tool-list
	// cache are not compiled.
	c.hostOpts = func(o *host.Options) { o.LazyPluginInstances = true }
	return c.listing("tools", args, func(ctx context.Context, h *host.Host, v catalogue, asJSON bool) int {
		tools, err := v.Tools(ctx)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
			return exitCallError
		}
		for _, st := range h.Status() {
			// Tools waited for backends still starting; name those it
			// gave up on, so an empty list is not taken for "no tools".
			if st.Tools == 0 && (st.State == host.StateStarting || st.State == host.StateRestarting) {
				fmt.Fprintf(c.stderr, "toolhost: backend %s is still %s; its tools are not listed\n", st.Name, st.State)
			}
		}
		if st := h.Status(); len(st) > 0 && !anyReady(st) {
			fmt.Fprintf(c.stderr, "toolhost: no tools: none of the %d backends is ready (their errors are logged above); run 'toolhost status' for their state\n", len(st))
			return exitCallError
		}
		if asJSON {
			type jsonTool struct {
				Name         string               `json:"name"`
				Backend      string               `json:"backend"`
				BackendTool  string               `json:"backend_tool"`
				Title        string               `json:"title,omitempty"`
				Description  string               `json:"description,omitempty"`
				InputSchema  any                  `json:"inputSchema"`
				OutputSchema any                  `json:"outputSchema,omitempty"`
				Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
			}
			out := make([]jsonTool, 0, len(tools))
			for _, t := range tools {
				out = append(out, jsonTool{t.Name, t.Backend, t.BackendTool, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations})
			}
			return c.printJSON(out)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBACKEND\tDESCRIPTION")
		for _, t := range tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Backend, esc(firstLine(t.Description, 70)))
		}
		tw.Flush()
		return exitOK
	})
}

// anyReady reports whether a backend of st is ready.
func anyReady(st []host.BackendStatus) bool {
	for _, s := range st {
		if s.State == host.StateReady {
			return true
		}
	}
	return false
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false) // "->" stays "->": the output is not HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitCallError
	}
	return exitOK
}

// stdin is what --args - reads; a variable so that tests can replace it.
var stdin io.Reader = os.Stdin

// maxArgsBytes bounds the arguments read by --args @FILE and --args -.
const maxArgsBytes = 64 << 20

const callUsage = `Usage: toolhost call NAME [--args JSON | --args @FILE | --args -] [--profile NAME] [--json]

Call the tool NAME (a name from 'toolhost tools') and print its result: its text content, or its
structured content as indented JSON when it has no text.

  --args JSON     the arguments: a JSON object (default {})
  --args @FILE    read the arguments from FILE (for inputs too large for the command line)
  --args -        read the arguments from stdin
  --profile NAME  call through the profile [profiles.NAME] (default: the [policy] alone)
  --json          print the whole MCP result as JSON

Only the backends the call needs are started: those whose tool prefix begins NAME, the owner of its
[tools.NAME] fallback, and those the profile requires (an unknown tool starts them all, so that its
suggestions come from the whole catalogue).

Exit status: 0 ok; 1 the tool returned an error result (also: arguments that do not match the
tool's inputSchema); 2 usage or configuration error (also: --args not a JSON object, unknown
profile); 3 the call could not be made (unknown tool, backend unavailable, timeout); 4 the policy
or the profile denied the call.
`

// helpOr handles a subcommand's flag error: for -h or --help it prints
// text to stdout and returns exitOK; otherwise a usage error.
func (c *cli) helpOr(err error, text, short string) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, text)
		return exitOK
	}
	return c.usageError(short)
}

// readArgs returns the text of --args: JSON as given, @FILE's content, or
// stdin's for "-" (at most maxArgsBytes). It must be a JSON object.
func readArgs(v string) ([]byte, error) {
	var b []byte
	switch {
	case v == "-" || strings.HasPrefix(v, "@"):
		r, what := stdin, "stdin"
		if v != "-" {
			f, err := os.Open(v[1:])
			if err != nil {
				return nil, fmt.Errorf("--args %s: %w", v, err)
			}
			defer f.Close()
			r, what = f, v[1:]
		}
		var err error
		if b, err = io.ReadAll(io.LimitReader(r, maxArgsBytes+1)); err != nil {
			return nil, fmt.Errorf("--args %s: reading %s: %w", v, what, err)
		}
		if len(b) > maxArgsBytes {
			return nil, fmt.Errorf("--args %s: %s holds more than %d MiB of arguments", v, what, maxArgsBytes>>20)
		}
	default:
		b = []byte(v)
	}
	switch t, err := jsonx.Object(b); {
	case errors.Is(err, jsonx.ErrSyntax):
		return nil, fmt.Errorf("--args is not valid JSON: %s", firstLine(string(b), 200))
	case err != nil:
		return nil, fmt.Errorf(`--args must be a JSON object, like '{"key":"value"}': got %s`, firstLine(string(t), 200))
	}
	return b, nil
}

func (c *cli) call(args []string) int {
	// The call's one deadline runs from here: starting its backend is
	// inside it (host.WithCallStart).
	began := time.Now()
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	argJSON := fs.String("args", "{}", "")
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	short := `usage: toolhost call NAME [--args JSON | --args @FILE | --args -] [--profile NAME] [--json]`
	pos, err := parse(fs, args)
	if err != nil {
		return c.helpOr(err, callUsage, short)
	}
	if len(pos) != 1 {
		return c.usageError(short)
	}
	name := pos[0]
	argText, err := readArgs(*argJSON)
	if err != nil {
		return c.usageError(err.Error())
	}
	c.prepare = func(cfg *config.Config) { c.startOnly(cfg, host.Needs(cfg, name, *profile)) }
	c.callOnly = true
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		start := time.Now()
		callCtx, bar := host.WithCallStart(ctx, began), (*progressBar)(nil)
		if isTerminal(c.stderr) {
			// The server's progress, if it sends any, as a bar on stderr.
			bar = &progressBar{w: c.stderr}
			callCtx = host.WithProgress(callCtx, bar.update)
		}
		res, err := v.CallTool(callCtx, name, json.RawMessage(argText))
		if bar != nil {
			bar.clear()
		}
		if errors.Is(err, host.ErrToolNotAllowed) {
			fmt.Fprintf(c.stderr, "toolhost: call denied: %s\n", esc(err))
			fmt.Fprintf(c.stderr, "Run 'toolhost tools%s' to list the tools you may call.\n", profileFlag(*profile))
			return exitDenied
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: call failed: %s\n", esc(err))
			switch {
			case errors.Is(err, host.ErrUnknownTool):
				fmt.Fprintf(c.stderr, "Run 'toolhost tools%s' to list the tools you may call.\n", profileFlag(*profile))
			case errors.Is(err, host.ErrBackendUnavailable), errors.Is(err, host.ErrRequiredBackend):
				fmt.Fprintf(c.stderr, "Run 'toolhost status' for the state of every backend.\n")
			}
			if errors.Is(err, transport.ErrNeedsLogin) {
				// The library's error names the server, not the command.
				for _, st := range h.Status() {
					if st.State == host.StateNeedsLogin {
						fmt.Fprintf(c.stderr, "Backend %s needs an OAuth login: run `toolhost login %s`, then retry.\n", st.Name, st.Name)
					}
				}
			}
			return exitCallError
		}
		c.logger.Debug("call done", "tool", name, "elapsed", time.Since(start))
		if *asJSON {
			if code := c.printJSON(res); code != exitOK {
				return code
			}
		} else {
			printResult(c.stdout, res, isTerminal(c.stdout))
		}
		if res.IsError {
			fmt.Fprintf(c.stderr, "toolhost: tool %s returned an error result\n", name)
			return exitToolError
		}
		return exitOK
	})
}

// startOnly leaves every backend of cfg not in needs lazy (started only if
// the call turns out to need it: an unknown tool, whose suggestions come
// from the whole catalogue, starts them all). Empty needs (no backend's
// prefix fits the name) leaves cfg as it is: every backend starts.
func (c *cli) startOnly(cfg *config.Config, needs []string) {
	if len(needs) == 0 {
		return
	}
	need := map[string]bool{}
	for _, n := range needs {
		need[n] = true
	}
	for n, s := range cfg.Servers {
		if !need[n] {
			s.Start = config.StartLazy
		}
	}
	for n, p := range cfg.Plugins {
		if !need[n] {
			p.Start = config.StartLazy
		}
	}
	c.logger.Debug("starting only the backends the call needs", "backends", needs)
}

// profileFlag is " --profile NAME" for a profile, else "".
func profileFlag(profile string) string {
	if profile == "" {
		return ""
	}
	return " --profile " + profile
}

// printResult writes a result for a person: text as is, structured content
// as indented JSON when there is no text, and a one-line summary of other
// content. On a terminal, control characters in it are escaped
// (termsafe.Text: newlines and tabs kept, ESC, CR, ... shown as \x1b, \r).
func printResult(w io.Writer, res *mcp.CallToolResult, terminal bool) {
	text, line := func(s string) string { return s }, func(s string) string { return s }
	if terminal {
		text, line = termsafe.Text, termsafe.Line
	}
	hasText := false
	for _, ct := range res.Content {
		switch ct := ct.(type) {
		case *mcp.TextContent:
			hasText = true
			fmt.Fprintln(w, text(ct.Text))
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", line(ct.MIMEType), len(ct.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", line(ct.MIMEType), len(ct.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s %s]\n", line(ct.URI), line(ct.Name))
		case *mcp.EmbeddedResource:
			if ct.Resource != nil && ct.Resource.Text != "" {
				fmt.Fprintln(w, text(ct.Resource.Text))
			} else if ct.Resource != nil {
				fmt.Fprintf(w, "[resource %s, %d bytes]\n", line(ct.Resource.URI), len(ct.Resource.Blob))
			}
		default:
			b, _ := json.Marshal(ct)
			fmt.Fprintln(w, text(string(b)))
		}
	}
	if res.StructuredContent != nil && !hasText {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, text(string(b)))
	}
}

func (c *cli) status(args []string) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	watch := fs.Duration("watch", 0, "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 || *watch < 0 {
		return c.usageError("usage: toolhost status [--json] [--watch INTERVAL]")
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		// One health check of every ready backend first, so that HEALTH
		// says something about a host that has only just started.
		checkAll(ctx, h)
		for {
			st := h.Status()
			if *asJSON {
				if code := c.printJSON(st); code != exitOK {
					return code
				}
			} else {
				printStatus(c.stdout, st)
			}
			if *watch == 0 {
				return exitOK
			}
			select {
			case <-ctx.Done():
				return exitOK
			case <-time.After(*watch):
				if !*asJSON {
					fmt.Fprintln(c.stdout)
				}
			}
		}
	})
}

// checkAll runs one health check of every ready backend, concurrently;
// the results land in h.Status.
func checkAll(ctx context.Context, h *host.Host) {
	var wg sync.WaitGroup
	for _, st := range h.Status() {
		if st.State == host.StateReady && st.Health != host.HealthOff {
			wg.Go(func() { _ = h.CheckHealth(ctx, st.Name) })
		}
	}
	wg.Wait()
}

// printStatus prints one line per backend.
func printStatus(w io.Writer, st []host.BackendStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tKIND\tSTATE\tPID\tUPTIME\tRESTARTS\tHEALTH\tCIRCUIT\tTOOLS\tLAST ERROR")
	for _, s := range st {
		pid, uptime := "-", "-"
		if s.Pid > 0 {
			pid = fmt.Sprint(s.Pid)
		}
		if s.State == host.StateReady {
			uptime = (time.Duration(s.UptimeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		if s.State == host.StateRestarting {
			uptime = "next in " + time.Until(s.NextRestart).Round(100*time.Millisecond).String()
		}
		health := s.Health
		if s.HealthFailures > 0 {
			health = fmt.Sprintf("%s (%d)", health, s.HealthFailures)
		}
		circuit := s.Circuit
		if len(s.OpenTools) > 0 {
			circuit += fmt.Sprintf(" (%d tools open)", len(s.OpenTools))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n", s.Name, s.Kind, s.State, pid, uptime, s.Restarts, health, circuit, s.Tools, dash(esc(firstLine(s.LastError, 100))))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) check(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	profile := fs.String("profile", "", "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError("usage: toolhost check [--profile NAME]")
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	if *profile != "" {
		if _, ok := cfg.Profiles[*profile]; !ok {
			return c.usageError(fmt.Sprintf("no profile %q in %s: the profiles are its [profiles.NAME] tables", *profile, cfg.Path))
		}
	}
	// What Load leaves alone: files, commands, module memory. Nothing is
	// started.
	if err := cfg.Check(&config.CheckOptions{Module: sandbox.CheckModule, DefaultMemory: sandbox.DefaultMemory}); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "configuration %s is valid\n", cfg.Path)
	fmt.Fprintf(c.stdout, "call timeout: %s\n", cfg.Host.CallTimeout)
	fmt.Fprintf(c.stdout, "policy: default %s, %d allow, %d deny; profiles: %s\n", cfg.Policy.Default, len(cfg.Policy.Allow), len(cfg.Policy.Deny), dash(strings.Join(sortedNames(cfg.Profiles), ", ")))
	if cfg.Host.AuditLog != "" {
		fmt.Fprintf(c.stdout, "audit log: %s\n", cfg.Host.AuditLog)
		if code := c.checkAuditKey(); code != exitOK {
			return code
		}
	}
	for _, d := range cfg.DeadAllows() {
		fmt.Fprintf(c.stdout, "note: %s can never allow anything: %s denies all it matches (deny wins)\n", d.Allow, d.Deny)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tKIND\tTOOL PREFIX\tTIMEOUT\tSTARTS")
	names := cfg.Backends()
	sort.Strings(names)
	for _, n := range names {
		if s, ok := cfg.Servers[n]; ok {
			prefix, timeout := prefixText(n, s.Prefix), effective(s.Timeout, cfg.Host.CallTimeout)
			if s.IsStdio() {
				fmt.Fprintf(tw, "%s\tstdio\t%s\t%s\t%s\n", n, prefix, timeout, strings.Join(append([]string{s.Command}, s.Args...), " "))
			} else {
				fmt.Fprintf(tw, "%s\thttp\t%s\t%s\t%s\n", n, prefix, timeout, redact.URL(s.URL))
			}
			continue
		}
		p := cfg.Plugins[n]
		fmt.Fprintf(tw, "%s\twasm\t%s\t%s\t%s\n", n, prefixText(n, p.Prefix), effective(p.Timeout, cfg.Host.CallTimeout), p.Path)
	}
	tw.Flush()
	c.checkLogins(cfg)
	for _, n := range sortedNames(cfg.Tools) {
		t := cfg.Tools[n]
		var opts []string
		if t.Retry {
			opts = append(opts, "retried when the backend fails it (retry = true)")
		}
		if t.Fallback != "" {
			opts = append(opts, "falls back to "+t.Fallback)
		}
		fmt.Fprintf(c.stdout, "tool %s: %s\n", n, dash(strings.Join(opts, "; ")))
	}
	if *profile == "" {
		return exitOK
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		return c.checkProfile(ctx, h, cfg, *profile)
	})
}

// checkProfile prints the profile's effective catalogue and, for every
// other configured tool, the rule that excludes it.
func (c *cli) checkProfile(ctx context.Context, h *host.Host, cfg *config.Config, profile string) int {
	v, err := h.Profile(profile)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	code := exitOK
	for _, msg := range h.ToolOptionProblems() {
		fmt.Fprintf(c.stdout, "warning: %s\n", esc(msg))
	}
	p := cfg.Profiles[profile]
	fmt.Fprintf(c.stdout, "\nprofile %s\n", profile)
	st := map[string]host.BackendStatus{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	for _, b := range p.Requires {
		switch s := st[b]; s.State {
		case host.StateReady:
			fmt.Fprintf(c.stdout, "requires %s: ready\n", b)
		case host.StateIdle, host.StateStarting:
			// Lazy (start = "lazy"): not down, it starts at first use.
			fmt.Fprintf(c.stdout, "requires %s: %s (starts at first use)\n", b, s.State)
		default:
			fmt.Fprintf(c.stdout, "requires %s: NOT READY (%s): every call in this profile fails\n", b, notReadyWhy(s))
			code = exitCallError
		}
	}
	for _, b := range p.Recommends {
		switch s := st[b]; s.State {
		case host.StateReady:
		case host.StateIdle, host.StateStarting:
			fmt.Fprintf(c.stdout, "recommends %s: %s (starts at first use)\n", b, s.State)
		default:
			fmt.Fprintf(c.stdout, "recommends %s: warning: not ready (%s)\n", b, notReadyWhy(s))
		}
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOOL\tBACKEND\tDECISION\tRULE")
	for _, d := range v.Decisions() {
		verdict := "allowed"
		if !d.Allowed {
			verdict = "excluded"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Backend, verdict, d.Rule)
	}
	for _, e := range h.Excluded() {
		fmt.Fprintf(tw, "(%s)\t%s\t%s\t%s\n", esc(e.Tool), e.Backend, "not registered", esc(e.Reason))
	}
	tw.Flush()
	return code
}

// notReadyWhy is a backend's last error, else its state (never empty).
func notReadyWhy(s host.BackendStatus) string {
	if s.LastError != "" {
		return esc(firstLine(s.LastError, 100))
	}
	if s.State == "" {
		return "no such backend"
	}
	return string(s.State)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func prefixText(name string, p *string) string {
	if p == nil {
		return name + "__"
	}
	if *p == "" {
		return "(none)"
	}
	return *p
}

func effective(own, def config.Duration) config.Duration {
	if own > 0 {
		return own
	}
	return def
}
