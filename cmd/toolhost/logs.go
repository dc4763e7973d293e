package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/serverlog"
)

const logsUsage = "usage: toolhost logs NAME [-f] [-n N] [--url URL [--token-env VAR]]"

// Bounds of toolhost logs.
const (
	defaultLogLines = 100
	// logsPoll is how often -f --url asks the running serve again.
	logsPoll = time.Second
	// logsPollWindow is the lines each poll of -f --url asks for: more new
	// lines than this within one poll are not all shown (said once).
	logsPollWindow = 1000
	// maxLogsBody bounds a logs response read from serve (10,000 lines of
	// up to 64 KiB are cut to 8 MiB by serve).
	maxLogsBody = 16 << 20
)

// logs prints the end of backend NAME's log file ([host] log_directory)
// and with -f follows it (across rotation) until interrupted. Every line
// has its control characters escaped. With --url it asks a running
// `toolhost serve` instead (GET /api/v1/servers/NAME/logs; -f polls it
// every second), with the bearer token in $VAR (--token-env, default
// TOOLHOST_TOKEN) when set.
func (c *cli) logs(args []string) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	follow := fs.Bool("f", false, "")
	fs.BoolVar(follow, "follow", false, "")
	n := fs.Int("n", defaultLogLines, "")
	base := fs.String("url", "", "")
	tokenEnv := fs.String("token-env", "TOOLHOST_TOKEN", "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError(logsUsage)
	}
	if *n < 0 || *n > host.MaxLogTail {
		return c.usageError(fmt.Sprintf("toolhost logs: -n must be from 0 to %d", host.MaxLogTail))
	}
	name := pos[0]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := serverlog.File("", name); err != nil {
		return c.usageError(fmt.Sprintf("toolhost logs: %v", err))
	}
	if *base != "" {
		return c.remoteLogs(ctx, *base, os.Getenv(*tokenEnv), name, *n, *follow)
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	dir := cfg.Host.LogDirectory
	if dir == "" {
		fmt.Fprintf(c.stderr, "toolhost logs: no log files: [host] log_directory is not set in %s\n", cfg.Path)
		return exitUsage
	}
	if cfg.Servers[name] == nil && cfg.Plugins[name] == nil {
		fmt.Fprintf(c.stderr, "toolhost logs: no backend %q: backends are the [servers.NAME] and [plugins.NAME] tables of %s\n", name, cfg.Path)
		return exitUsage
	}
	print := func(line string) { fmt.Fprintln(c.stdout, esc(line)) }
	if *follow {
		if err := serverlog.Follow(ctx, dir, name, *n, 0, print); err != nil {
			fmt.Fprintf(c.stderr, "toolhost logs: %v\n", err)
			return exitCallError
		}
		return exitOK
	}
	if *n == 0 {
		return exitOK
	}
	lines, err := serverlog.Tail(dir, name, *n)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost logs: %v\n", err)
		return exitCallError
	}
	for _, l := range lines {
		print(l)
	}
	return exitOK
}

// remoteLogs is logs --url.
func (c *cli) remoteLogs(ctx context.Context, base, token, name string, n int, follow bool) int {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/mcp"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c.usageError("toolhost logs: --url must be the serve URL, such as http://127.0.0.1:8808")
	}
	u = u.JoinPath("api", "v1", "servers", name, "logs")
	get := func(tail int) ([]string, error) {
		q := url.Values{"tail": {strconv.Itoa(tail)}}
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
		if err != nil {
			return nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var body struct {
			Lines []string `json:"lines"`
			Error *struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxLogsBody)).Decode(&body); err != nil {
			return nil, fmt.Errorf("%s: HTTP %d, not a logs response: %w", u.Redacted(), resp.StatusCode, err)
		}
		if resp.StatusCode != http.StatusOK {
			if body.Error != nil {
				return nil, fmt.Errorf("%s: HTTP %d %s: %s", u.Redacted(), resp.StatusCode, body.Error.Kind, body.Error.Message)
			}
			return nil, fmt.Errorf("%s: HTTP %d", u.Redacted(), resp.StatusCode)
		}
		return body.Lines, nil
	}
	fail := func(err error) int {
		if ctx.Err() != nil {
			return exitOK // interrupted
		}
		fmt.Fprintf(c.stderr, "toolhost logs: %s\n", esc(err))
		return exitCallError
	}
	var last []string // what was printed last (for -f: the overlap)
	if n > 0 {
		lines, err := get(n)
		if err != nil {
			return fail(err)
		}
		for _, l := range lines {
			fmt.Fprintln(c.stdout, esc(l))
		}
		last = lines
	}
	if !follow {
		return exitOK
	}
	tick := time.NewTicker(logsPoll)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
		lines, err := get(logsPollWindow)
		if err != nil {
			return fail(err)
		}
		fresh, gap := newLines(last, lines)
		if gap && last != nil && !warned {
			fmt.Fprintf(c.stderr, "toolhost logs: more than %d lines came within %v; some are not shown\n", logsPollWindow, logsPoll)
			warned = true
		}
		for _, l := range fresh {
			fmt.Fprintln(c.stdout, esc(l))
		}
		if len(lines) > 0 {
			last = lines
		}
	}
}

// newLines returns the lines of cur after those of prev: cur's lines
// following the last place where prev's last lines (up to 8) appear in
// it. gap reports that prev's end was not found (all of cur is new).
func newLines(prev, cur []string) (fresh []string, gap bool) {
	if len(prev) == 0 {
		return cur, true
	}
	k := min(8, len(prev))
	tail := prev[len(prev)-k:]
	for i := len(cur) - 1; i >= 0; i-- {
		m := min(k, i+1) // cur[:i+1] ends with prev's last m lines?
		if slices.Equal(cur[i+1-m:i+1], tail[k-m:]) {
			return cur[i+1:], false
		}
	}
	return cur, true
}
