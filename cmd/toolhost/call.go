package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/jsonx"
	"github.com/toolhost/toolhost/internal/termsafe"
	"github.com/toolhost/toolhost/transport"
)

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
or the profile denied the call, or the tool needs a grant ('toolhost grant --help') that the
call does not have (with grant = "ask", you are asked on a terminal).
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
	wait := func() {}
	defer func() { wait() }()
	c.prepare = func(cfg *config.Config) {
		c.startOnly(cfg, host.Needs(cfg, name, *profile))
		wait = warmSchemas() // oneshot.go: while the backend starts
	}
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
		if errors.Is(err, host.ErrGrantRequired) {
			// grants: the message names the command that grants it.
			fmt.Fprintf(c.stderr, "toolhost: call denied: %s\n", esc(err))
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
