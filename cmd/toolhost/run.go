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
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/otelx"
)

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1 // the tool ran and returned isError
	exitUsage     = 2 // bad flags or configuration
	exitCallError = 3 // the call could not be made
	exitDenied    = 4 // the policy refused the call (host.ErrToolNotAllowed), or it needs a grant (host.ErrGrantRequired)
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
  status [--json] [--watch D]    start every backend and show its state (every D until interrupted);
                                 with --url URL, the state of a running serve's backends instead
  check [--profile NAME]         validate the configuration (also: plugin files and their declared
                                 memory, server commands in PATH; OCI plugins are resolved and
                                 pulled, with their digest shown) and show what would load;
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
  audit [--tool G] [--client C] [--outcome O] [--since D|TIME] [--correlation ID] [--limit N] [--json]
                                 query the audit trail in the store, newest first
  store migrate | check          apply the store's schema migrations, or show its engine, URL,
                                 schema version and pending migrations ('toolhost store --help')
  serve [--stdio | --listen ADDR] [--profile NAME] [--allow-unauthenticated] [--watch]
                                 serve the catalogue as an MCP server: on stdin/stdout, or over
                                 Streamable HTTP at http://ADDR/mcp (default [serve] listen,
                                 127.0.0.1:8808); [serve.clients.NAME] tokens select profiles;
                                 SIGHUP (and, with --watch, a change of the file) reloads the
                                 configuration without a restart
  reload --url URL [--json]      make a running serve reload its configuration file (as SIGHUP)
  restart NAME --url URL         restart one backend of a running serve
                                 (--url commands: the token comes from $TOOLHOST_TOKEN, or the
                                 variable --token-env VAR names; never from a flag)
  approve [BACKEND|TOOL ...] [--all] [--diff] [--json]
                                 list the tools quarantined by tool-definition pinning ([host] pin)
                                 and approve their new definitions ('toolhost approve --help')
  logs NAME [-f] [-n N] [--url URL [--token-env VAR]]
                                 print the last N (100) lines of a backend's log file ([host]
                                 log_directory), -f to follow it; --url asks a running serve
  grant SUBJECT TOOL --ttl D [--uses N] [--reason TEXT]
                                 let a [serve.clients] client or a [profiles] profile call a tool
                                 that needs a grant ([tools.NAME] grant) for D ('toolhost grant --help')
  grants [--all] [--json]        list the live grants (--all: every one); revoke ID ends one
  import FILE [--prefix-check]   translate a client's MCP configuration (Claude Desktop, Cursor, Claude
                                 Code, VS Code) into [servers.NAME] tables on stdout; the variables
                                 to set and what could not be translated go to stderr
  add [NAME] [--as TABLE] [--dry-run] | add --from-registry SERVER.JSON
                                 append a pinned, sandboxed [servers.NAME] entry from the built-in
                                 catalogue (no NAME: list it) or an MCP Registry server.json to the
                                 configuration; the variables to set go to stderr ('toolhost add --help')
  pull REF [--sha256 HEX] [--json]
                                 fetch a plugin from an OCI registry (REF oci://REGISTRY/REPO:TAG or
                                 @sha256:DIGEST) into the cache; print its digest and cached file
  push PLUGIN.wasm REF [--json]  publish a plugin to an OCI registry as a wasm artifact; print the
                                 manifest and module digests

Global flags (before or after the command):
  --config PATH     configuration file (default $TOOLHOST_CONFIG, else ./toolhost.toml)
  --log-level LEVEL trace, debug, info, warn (default), error or off; logs go to stderr

Exit status: 0 ok, 1 tool returned an error result (also: arguments that do not match its
inputSchema), 2 usage or configuration error (also: --args not a JSON object, unknown profile),
3 call failed (unknown tool, backend unavailable, timeout; for tools: no backend is ready),
4 call denied by the policy or the profile (also: a prompt or resource), or for want of a grant.
`

type cli struct {
	stdout, stderr io.Writer
	cfg            *config.Config // the configuration withHost loaded
	configPath     string
	logLevel       string
	logger         hclog.Logger
	// serving, set by toolhost serve, makes withHost build a Host for a
	// gateway (gateway.Relay) counting in these metrics: no elicitation
	// on stdin.
	serving *gateway.Metrics
	// prepare, when set, adjusts the loaded configuration before withHost
	// builds its Host (call: start only the backends the call needs).
	prepare func(cfg *config.Config)
	// callOnly, set by call, makes withHost not wait in host.New for the
	// backends' first start: the call's one deadline, from the command's
	// start, covers that wait (the host's resolve layer waits for a
	// backend coming up within it), so a backend slower to start than its
	// timeout fails the call at the timeout, not after its start. It
	// also compiles only the called tool's schemas
	// (host.Options.CompileOnDemand).
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
	case "store":
		return c.storeCmd(rest) // store.go
	case "import":
		return c.importCmd(rest)
	case "add":
		return c.addCmd(rest)
	case "pull":
		return c.pull(rest)
	case "push":
		return c.push(rest)
	case "reload":
		return c.reloadCmd(rest)
	case "restart":
		return c.restartCmd(rest)
	case "logs":
		return c.logs(rest)
	// grants (issue 25, item 3): cmd/toolhost/grant.go
	case "grant":
		return c.grantCmd(rest)
	case "grants":
		return c.grantsCmd(rest)
	case "revoke":
		return c.revokeCmd(rest)
	case "approve":
		return c.approveCmd(rest)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return c.usageError(fmt.Sprintf("unknown command %q", cmd))
}

// subcommandValueFlags are the subcommands' flags that take a value (so the
// word after them is not read as a global flag).
// (serve's --watch takes none: a word after a value flag that is itself a
// flag is not taken as its value.)
var subcommandValueFlags = map[string]bool{"args": true, "profile": true, "watch": true, "timeout": true, "as": true, "from-registry": true, "sha256": true, "url": true, "token-env": true,
	"tool": true, "client": true, "outcome": true, "backend": true, "op": true, "since": true, "until": true, "correlation": true, "limit": true, // audit
	"ttl": true, "uses": true, "reason": true} // grant

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
			if subcommandValueFlags[name] && !hasValue && i+1 < len(args) && (args[i+1] == "-" || !strings.HasPrefix(args[i+1], "-")) {
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

// configFile is the configuration file's path: --config, else
// $TOOLHOST_CONFIG, else defaultConfig.
func (c *cli) configFile() string {
	path := c.configPath
	if path == "" {
		path = os.Getenv("TOOLHOST_CONFIG")
	}
	if path == "" {
		path = defaultConfig
	}
	return path
}

func (c *cli) loadConfig() (*config.Config, int) {
	path := c.configFile()
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
	// Traces (README "Traces"): on when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT
	// is set; the spans still queued are flushed once the Host is closed.
	shutdownTraces, err := otelx.Setup(ctx, func(err error) { c.logger.Warn("traces", "error", err) })
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), otelx.ShutdownTimeout)
		defer cancel()
		if err := shutdownTraces(sctx); err != nil {
			c.logger.Warn("traces: flushing at exit", "error", err)
		}
	}()
	opts := &host.Options{Logger: c.logger, CompileOnDemand: c.callOnly}
	if c.serving != nil {
		// Requests of a server go to the gateway's client that made the
		// call (stdin may be the protocol).
		gateway.Relay(opts, c.serving)
	} else {
		// Servers may ask the user for input on a terminal.
		opts.Elicit = (&elicitor{stderr: c.stderr}).elicit
	}
	if c.serving != nil { // serve opens its store at start (store.go)
		closeStore, code := c.serveStore(ctx, cfg, opts)
		if closeStore == nil {
			return code
		}
		defer closeStore() // after the Host is closed
	}
	if c.hostOpts != nil {
		c.hostOpts(opts)
	}
	closeStore, code := c.pinStore(ctx, cfg, opts) // approve.go: pins need the shared store
	if closeStore == nil {
		return code
	}
	defer closeStore() // after h.Close (deferred below)
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

// view returns the Host, or the View of profile when it is not empty.
func (c *cli) view(h *host.Host, profile string) (host.Catalogue, int) {
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
func (c *cli) listing(name string, args []string, f func(ctx context.Context, h *host.Host, v host.Catalogue, asJSON bool) int) int {
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func effective(own, def config.Duration) config.Duration {
	if own > 0 {
		return own
	}
	return def
}
