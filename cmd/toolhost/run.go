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
	"github.com/toolhost/toolhost/internal/termsafe"
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
  call NAME [--args JSON] [--profile NAME] [--json]
                                 call a tool and print its result
  status [--json] [--watch D]    start every backend and show its state (every D until interrupted)
  check [--profile NAME]         validate the configuration and show what would load;
                                 with --profile, start the backends and show the profile's
                                 catalogue and the rule that excludes each other tool
  inspect PLUGIN.wasm [--json]   show a plugin's ABI, tools and imports, with no capabilities

Global flags:
  --config PATH     configuration file (default $TOOLHOST_CONFIG, else ./toolhost.toml)
  --log-level LEVEL trace, debug, info, warn (default), error or off; logs go to stderr

Exit status: 0 ok, 1 tool returned an error result (also: invalid arguments), 2 usage or
configuration error (also: unknown profile), 3 call failed (unknown tool, backend unavailable,
timeout), 4 call denied by the policy or the profile.
`

type cli struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	logger         hclog.Logger
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
	level := hclog.LevelFromString(c.logLevel)
	if level == hclog.NoLevel {
		return c.usageError(fmt.Sprintf("unknown --log-level %q", c.logLevel))
	}
	c.logger = hclog.New(&hclog.LoggerOptions{Name: "toolhost", Level: level, Output: stderr})

	cmd, rest := fs.Arg(0), fs.Args()[1:]
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
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return c.usageError(fmt.Sprintf("unknown command %q", cmd))
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := host.New(ctx, cfg, &host.Options{Logger: c.logger})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	defer func() {
		if err := h.Close(); err != nil {
			c.logger.Warn("close", "error", err)
		}
	}()
	for _, st := range h.Status() {
		if st.State == host.StateFailed || st.State == host.StateRestarting {
			fmt.Fprintf(c.stderr, "toolhost: warning: backend %s failed to start (%s): %s\n", st.Name, st.State, esc(st.LastError))
		}
	}
	return f(ctx, h)
}

// catalogue is what tools and call use: the Host itself or a profile's View.
type catalogue interface {
	Tools(ctx context.Context) ([]host.Tool, error)
	CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error)
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

func (c *cli) tools(args []string) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError("usage: toolhost tools [--profile NAME] [--json]")
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		tools, err := v.Tools(ctx)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
			return exitCallError
		}
		if *asJSON {
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
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitCallError
	}
	return exitOK
}

func (c *cli) call(args []string) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	argJSON := fs.String("args", "{}", "")
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError(`usage: toolhost call NAME [--args '{"key":"value"}'] [--profile NAME] [--json]`)
	}
	name := pos[0]
	if !json.Valid([]byte(*argJSON)) {
		return c.usageError(fmt.Sprintf("--args is not valid JSON: %s", *argJSON))
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		start := time.Now()
		res, err := v.CallTool(ctx, name, json.RawMessage(*argJSON))
		if errors.Is(err, host.ErrToolNotAllowed) {
			fmt.Fprintf(c.stderr, "toolhost: call denied: %s\n", esc(err))
			return exitDenied
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: call failed: %s\n", esc(err))
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
	fmt.Fprintf(c.stdout, "configuration %s is valid\n", cfg.Path)
	fmt.Fprintf(c.stdout, "call timeout: %s\n", cfg.Host.CallTimeout)
	fmt.Fprintf(c.stdout, "policy: default %s, %d allow, %d deny; profiles: %s\n", cfg.Policy.Default, len(cfg.Policy.Allow), len(cfg.Policy.Deny), dash(strings.Join(sortedNames(cfg.Profiles), ", ")))
	if cfg.Host.AuditLog != "" {
		fmt.Fprintf(c.stdout, "audit log: %s\n", cfg.Host.AuditLog)
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
				fmt.Fprintf(tw, "%s\thttp\t%s\t%s\t%s\n", n, prefix, timeout, s.URL)
			}
			continue
		}
		p := cfg.Plugins[n]
		fmt.Fprintf(tw, "%s\twasm\t%s\t%s\t%s\n", n, prefixText(n, p.Prefix), effective(p.Timeout, cfg.Host.CallTimeout), p.Path)
	}
	tw.Flush()
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
		if s := st[b]; s.State != host.StateReady {
			fmt.Fprintf(c.stdout, "requires %s: NOT READY (%s): every call in this profile fails\n", b, dash(esc(firstLine(s.LastError, 100))))
			code = exitCallError
		} else {
			fmt.Fprintf(c.stdout, "requires %s: ready\n", b)
		}
	}
	for _, b := range p.Recommends {
		if s := st[b]; s.State != host.StateReady {
			fmt.Fprintf(c.stdout, "recommends %s: warning: not ready (%s)\n", b, dash(esc(firstLine(s.LastError, 100))))
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
