package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
)

// The remote CLI: `toolhost status|reload|restart ... --url URL` talk to
// a running toolhost serve's REST API (host/gateway/routes.go) instead of
// starting backends of their own.

// defaultTokenEnv is the environment variable the remote commands read
// their bearer token from, unless --token-env names another. A token is
// never a flag: it would show in ps.
const defaultTokenEnv = "TOOLHOST_TOKEN"

// maxResponse bounds the body of a response the remote commands read
// (16 MiB); a longer one is an error.
const maxResponse = 16 << 20

// remoteTimeout bounds one request: a reload waits for the new
// backends' first start (each bounded by its startup_timeout).
const remoteTimeout = 5 * time.Minute

// remote is a client of one toolhost serve's REST API.
type remote struct {
	base  string // scheme://host[:port][/prefix], without a trailing slash
	token string // "" sends no Authorization header
	hc    *http.Client
}

// remoteFlags adds --url and --token-env to fs.
func remoteFlags(fs *flag.FlagSet) (rawURL, tokenEnv *string) {
	return fs.String("url", "", ""), fs.String("token-env", defaultTokenEnv, "")
}

// newRemote checks --url and reads the token from the environment
// variable tokenEnv. rawURL is serve's base URL (http://127.0.0.1:8808) or
// its MCP endpoint (…/mcp, as serve prints it). On a bad flag it prints
// why and returns exitUsage.
func (c *cli) newRemote(rawURL, tokenEnv string) (*remote, int) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		shown := rawURL
		if u != nil {
			shown = u.Redacted() // a password given in --url is not printed back
		}
		return nil, c.usageError(fmt.Sprintf("--url %s: want the address of a running toolhost serve, like http://127.0.0.1:8808 (no user, query or fragment)", esc(fmt.Sprintf("%q", shown))))
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), "/mcp")
	r := &remote{base: u.Scheme + "://" + u.Host + path}
	if tokenEnv == "" {
		return nil, c.usageError("--token-env: want the name of an environment variable holding the bearer token")
	}
	tok, set := os.LookupEnv(tokenEnv)
	if !set && tokenEnv != defaultTokenEnv {
		return nil, c.usageError(fmt.Sprintf("--token-env %s: the variable is not set", esc(tokenEnv)))
	}
	for _, ch := range tok {
		if ch <= ' ' || ch >= 0x7f {
			return nil, c.usageError(fmt.Sprintf("$%s: a bearer token is printable ASCII without spaces", esc(tokenEnv)))
		}
	}
	r.token = tok
	if tok != "" && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		fmt.Fprintf(c.stderr, "toolhost: warning: sending the token of $%s in clear text to %s: use https beyond loopback\n", esc(tokenEnv), esc(u.Host))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	r.hc = &http.Client{
		Transport: tr,
		// A redirect is an error: the token must go only where --url says.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r, exitOK
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// remoteCtx is the context of one remote command: cancelled by SIGINT and
// SIGTERM, and after remoteTimeout.
func remoteCtx() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	return ctx, func() { cancel(); stop() }
}

// apiResponse is one answer of the REST API: its status and body (at most
// maxResponse bytes).
type apiResponse struct {
	status int
	body   []byte
}

// do sends method path (path and query, escaped by the caller) and reads
// the answer.
func (r *remote) do(ctx context.Context, method, path string) (*apiResponse, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach toolhost serve at %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %w", method, r.base+path, err)
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("the answer of %s %s is larger than %d MiB", method, r.base+path, maxResponse>>20)
	}
	return &apiResponse{status: resp.StatusCode, body: body}, nil
}

// request runs one request and, when it failed, prints why (escaped) and
// returns the exit status; on a 2xx answer it returns it and exitOK.
func (c *cli) request(r *remote, method, path string) (*apiResponse, int) {
	ctx, cancel := remoteCtx()
	defer cancel()
	defer r.hc.CloseIdleConnections()
	resp, err := r.do(ctx, method, path)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return nil, exitCallError
	}
	if resp.status >= 200 && resp.status < 300 {
		return resp, exitOK
	}
	return nil, c.apiFailure(r, method, path, resp)
}

// apiProblem is one problem of an invalid configuration in a reload's
// 400 answer.
type apiProblem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// apiFailure prints a REST error answer ({"error": {"kind", "message"}},
// and a reload's "problems") with every server-supplied string escaped,
// and maps its HTTP status to the CLI's exit status: 400 → 2 (bad request,
// invalid configuration), 401 and 403 → 4 (denied), anything else → 3
// (unknown backend, unavailable, not implemented by that serve, ...).
func (c *cli) apiFailure(r *remote, method, path string, resp *apiResponse) int {
	var body struct {
		Error    *struct{ Kind, Message string } `json:"error"`
		Problems []apiProblem                    `json:"problems"`
	}
	code := exitCallError
	switch resp.status {
	case http.StatusBadRequest:
		code = exitUsage
	case http.StatusUnauthorized, http.StatusForbidden:
		code = exitDenied
	}
	if json.Unmarshal(resp.body, &body) != nil || body.Error == nil {
		// Not the REST API's error: another server, or a serve without
		// the REST API.
		fmt.Fprintf(c.stderr, "toolhost: %s %s answered %d %s: %s\n", method, esc(r.base+path), resp.status, http.StatusText(resp.status), dash(esc(firstLine(string(resp.body), 200))))
		if resp.status == http.StatusNotFound {
			fmt.Fprintf(c.stderr, "toolhost: is %s a toolhost serve with the REST API (/api/v1)?\n", esc(r.base))
		}
		return code
	}
	if len(body.Problems) > 0 {
		fmt.Fprintf(c.stderr, "toolhost: %s: %s\n", esc(body.Error.Kind), esc(firstLine(body.Error.Message, 200)))
		for _, p := range body.Problems {
			var pos string
			switch {
			case p.File != "" && p.Line > 0:
				pos = fmt.Sprintf("%s:%d", p.File, p.Line)
			case p.File != "":
				pos = p.File
			case p.Line > 0:
				pos = fmt.Sprintf("line %d", p.Line)
			}
			parts := []string{}
			for _, s := range []string{pos, p.Key, p.Message} {
				if s != "" {
					parts = append(parts, esc(s))
				}
			}
			fmt.Fprintf(c.stderr, "  %s\n", strings.Join(parts, ": "))
		}
		return code
	}
	lines := strings.Split(strings.TrimSpace(body.Error.Message), "\n")
	if len(lines) > 100 {
		lines = append(lines[:100], fmt.Sprintf("(%d more lines)", len(lines)-100))
	}
	fmt.Fprintf(c.stderr, "toolhost: %s: %s\n", esc(body.Error.Kind), esc(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(c.stderr, "  %s\n", esc(l))
	}
	if resp.status == http.StatusNotImplemented {
		fmt.Fprintf(c.stderr, "toolhost: the toolhost serve at %s does not offer this yet\n", esc(r.base))
	}
	return code
}

// remoteStatus is `toolhost status --url`: GET /api/v1/status, printed as
// the local status prints it (table, or --json), every interval when
// watch is set, until interrupted.
func (c *cli) remoteStatus(r *remote, asJSON bool, watch time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		resp, code := c.request(r, http.MethodGet, "/api/v1/status")
		if code != exitOK {
			return code
		}
		var st []host.BackendStatus
		if err := json.Unmarshal(resp.body, &st); err != nil {
			fmt.Fprintf(c.stderr, "toolhost: GET %s/api/v1/status: not a status list: %s\n", esc(r.base), esc(err))
			return exitCallError
		}
		if asJSON {
			if code := c.printJSON(st); code != exitOK {
				return code
			}
		} else {
			printStatus(c.stdout, st)
			c.remoteStoreAndPins(r)
		}
		if watch == 0 {
			return exitOK
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(watch):
			if !asJSON {
				fmt.Fprintln(c.stdout)
			}
		}
	}
}

// remoteStoreAndPins prints, under a remote status, what the local status
// prints there: the store (GET /api/v1/store) when the serve has one, and
// its quarantined tools and tool-poisoning warnings (GET /api/v1/pins). A
// serve that answers neither (an older one, or pins with no store: 503)
// prints nothing more; the status itself was shown.
func (c *cli) remoteStoreAndPins(r *remote) {
	ctx, cancel := remoteCtx()
	defer cancel()
	defer r.hc.CloseIdleConnections()
	if resp, err := r.do(ctx, http.MethodGet, "/api/v1/store"); err == nil && resp.status == http.StatusOK {
		var ss host.StoreStatus
		if json.Unmarshal(resp.body, &ss) == nil && ss.URL != "" {
			printStoreStatus(tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0), ss)
		}
	}
	if resp, err := r.do(ctx, http.MethodGet, "/api/v1/pins"); err == nil && resp.status == http.StatusOK {
		var pl gateway.PinList
		if json.Unmarshal(resp.body, &pl) == nil {
			printQuarantine(c.stdout, pl.Quarantined, pl.Warnings)
		}
	}
}

// reloadCmd is `toolhost reload --url URL [--token-env VAR] [--json]`:
// POST /api/v1/reload makes a running serve read its configuration file
// again and apply it (as SIGHUP does). It prints what changed (the
// host.ApplyReport; --json as JSON), or every problem of an invalid
// configuration (nothing was changed; exit 2).
func (c *cli) reloadCmd(args []string) int {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	rawURL, tokenEnv := remoteFlags(fs)
	asJSON := fs.Bool("json", false, "")
	const use = "usage: toolhost reload --url URL [--token-env VAR] [--json]"
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError(use)
	}
	if *rawURL == "" {
		return c.usageError("reload needs a running toolhost serve: pass its --url (or send the serve process SIGHUP)\n" + use)
	}
	r, code := c.newRemote(*rawURL, *tokenEnv)
	if r == nil {
		return code
	}
	resp, code := c.request(r, http.MethodPost, "/api/v1/reload")
	if code != exitOK {
		return code
	}
	var rep host.ApplyReport
	if err := json.Unmarshal(resp.body, &rep); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: POST %s/api/v1/reload: not a reload report: %s\n", esc(r.base), esc(err))
		return exitCallError
	}
	if *asJSON {
		return c.printJSON(rep)
	}
	printReport(c.stdout, rep)
	return exitOK
}

// printReport prints what a reload did, one line per kind of change.
func printReport(w io.Writer, rep host.ApplyReport) {
	line := func(what string, names []string) {
		if len(names) == 0 {
			return
		}
		escd := make([]string, len(names))
		for i, n := range names {
			escd[i] = esc(n)
		}
		fmt.Fprintf(w, "%-10s %s\n", what, strings.Join(escd, ", "))
	}
	line("added", rep.Added)
	line("removed", rep.Removed)
	line("changed", rep.Changed)
	line("unchanged", rep.Unchanged)
	line("disabled", rep.Disabled)
	if rep.Policy {
		fmt.Fprintln(w, "policy     changed ([policy], [profiles] or [tools])")
	}
	if len(rep.Added)+len(rep.Removed)+len(rep.Changed) == 0 && !rep.Policy && len(rep.NotApplied) == 0 {
		fmt.Fprintln(w, "reloaded: nothing changed")
	}
	if len(rep.NotApplied) > 0 {
		line("restart", rep.NotApplied)
		fmt.Fprintln(w, "(those keys changed but keep their old values until toolhost serve is restarted)")
	}
}

// restartCmd is `toolhost restart NAME --url URL [--token-env VAR]`:
// POST /api/v1/servers/NAME/restart restarts one backend of a running
// serve. Without --url it is a usage error: there is nothing to restart
// in a toolhost that is not running.
func (c *cli) restartCmd(args []string) int {
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	rawURL, tokenEnv := remoteFlags(fs)
	const use = "usage: toolhost restart NAME --url URL [--token-env VAR]"
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 || pos[0] == "" {
		return c.usageError(use)
	}
	if *rawURL == "" {
		return c.usageError("restart needs a running toolhost serve: pass its --url\n" + use)
	}
	r, code := c.newRemote(*rawURL, *tokenEnv)
	if r == nil {
		return code
	}
	name := pos[0]
	resp, code := c.request(r, http.MethodPost, "/api/v1/servers/"+url.PathEscape(name)+"/restart")
	if code != exitOK {
		return code
	}
	fmt.Fprintf(c.stdout, "restarted %s\n", esc(name))
	// The answer may be the backend's status: show it as status does.
	var st host.BackendStatus
	if json.Unmarshal(bytes.TrimSpace(resp.body), &st) == nil && st.Name != "" {
		printStatus(c.stdout, []host.BackendStatus{st})
	}
	return exitOK
}
