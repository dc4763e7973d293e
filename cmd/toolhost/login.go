package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/transport"
)

// The login and logout commands: the OAuth authorization-code grant of one
// [servers.NAME] with an oauth table, done by a person in a browser.

// defaultLoginTimeout bounds a login: the time a person has to finish it in
// the browser.
const defaultLoginTimeout = 5 * time.Minute

// login runs `toolhost login NAME [--no-browser] [--timeout D]`.
func (c *cli) login(args []string) int {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	noBrowser := fs.Bool("no-browser", false, "")
	timeout := fs.Duration("timeout", defaultLoginTimeout, "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 || *timeout <= 0 {
		return c.usageError("usage: toolhost login NAME [--no-browser] [--timeout DURATION]")
	}
	name := pos[0]
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	s, code := c.oauthServer(cfg, name)
	if s == nil {
		return code
	}
	if s.OAuth.Grant == config.GrantClientCredentials {
		fmt.Fprintf(c.stdout, "%s uses the client_credentials grant: toolhost gets its tokens itself; there is nothing to log in to\n", name)
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// The redirect comes back to a loopback listener of ours (RFC 8252,
	// section 7.3).
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.OAuth.RedirectPort))
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: login %s: cannot listen for the redirect on 127.0.0.1:%d: %s\n", name, s.OAuth.RedirectPort, esc(err))
		return exitCallError
	}
	cb := newCallback(ln)
	defer cb.close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)

	store := &transport.FileTokenStore{}
	browser := &browserOpener{stderr: c.stderr, disabled: *noBrowser, interactive: isTerminal(c.stderr)}
	defer browser.wait()
	authorize := func(ctx context.Context, _ string, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fmt.Fprintf(c.stderr, "To log in to %s, open this URL in a browser on this machine:\n\n  %s\n\nWaiting for the browser to come back to %s ...\n", name, esc(a.URL), redirect)
		browser.open(a.URL)
		return cb.wait(ctx)
	}
	fresh := &freshStore{TokenStore: store}
	oa, err := host.NewOAuth(cfg, name, &host.OAuthConfig{Store: fresh, Authorize: authorize, RedirectURL: redirect, Logger: c.logger.Named(name)})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: login %s: %s\n", name, esc(err))
		return exitUsage
	}
	tr := transport.NewHTTP(s.URL, &transport.HTTPOptions{Headers: s.Headers, OAuth: oa, Logger: c.logger.Named(name)})
	defer tr.Close()
	if _, err := tr.Connect(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fmt.Fprintf(c.stderr, "toolhost: login %s: not completed within %s (--timeout)\n", name, *timeout)
			return exitCallError
		}
		fmt.Fprintf(c.stderr, "toolhost: login %s failed: %s\n", name, esc(err))
		return exitCallError
	}
	if !fresh.saved {
		fmt.Fprintf(c.stdout, "%s answered without asking for authorization: there is no token to store\n", name)
		return exitOK
	}
	path, _ := store.Path(oa.Key())
	fmt.Fprintf(c.stdout, "logged in to %s; the token is stored in %s\n", name, path)
	fmt.Fprintf(c.stdout, "a running toolhost uses it once the server is restarted (Host.Restart) or toolhost is started again\n")
	return exitOK
}

// logout runs `toolhost logout NAME`: the stored token is deleted.
func (c *cli) logout(args []string) int {
	fs := flag.NewFlagSet("logout", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError("usage: toolhost logout NAME")
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	s, code := c.oauthServer(cfg, pos[0])
	if s == nil {
		return code
	}
	if err := (&transport.FileTokenStore{}).Delete(context.Background(), transport.TokenKey{Server: pos[0], URL: s.URL}); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: logout %s: %s\n", pos[0], esc(err))
		return exitCallError
	}
	fmt.Fprintf(c.stdout, "logged out of %s: its stored token is deleted\n", pos[0])
	return exitOK
}

// oauthServer returns server name of cfg if it is an HTTP server with an
// oauth table, or prints why not.
func (c *cli) oauthServer(cfg *config.Config, name string) (*config.Server, int) {
	s := cfg.Servers[name]
	switch {
	case s == nil:
		return nil, c.usageError(fmt.Sprintf("no server %q in %s: the servers are its [servers.NAME] tables", name, cfg.Path))
	case s.IsStdio() || s.OAuth == nil:
		return nil, c.usageError(fmt.Sprintf("server %q has no [servers.%s.oauth] table: login is for HTTP servers that use OAuth", name, name))
	}
	return s, exitOK
}

// freshStore saves to the store but loads nothing, so that a login always
// asks for a new authorization (the old token stays until it succeeds).
type freshStore struct {
	transport.TokenStore
	mu    sync.Mutex
	saved bool
}

func (*freshStore) Load(context.Context, transport.TokenKey) (*transport.StoredToken, error) {
	return nil, nil
}

func (f *freshStore) Save(ctx context.Context, key transport.TokenKey, tok *transport.StoredToken) error {
	err := f.TokenStore.Save(ctx, key, tok)
	f.mu.Lock()
	f.saved = f.saved || err == nil
	f.mu.Unlock()
	return err
}

// callback receives the authorization server's redirect on a loopback
// listener: the first request to /callback is the answer.
type callback struct {
	srv    *http.Server
	result chan callbackResult
	done   chan struct{}
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// maxCallbackParam bounds each parameter of the redirect.
const maxCallbackParam = 4 << 10

func newCallback(ln net.Listener) *callback {
	cb := &callback{result: make(chan callbackResult, 1), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var res callbackResult
		switch {
		case q.Get("error") != "":
			msg := q.Get("error")
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			if len(msg) > maxCallbackParam {
				msg = msg[:maxCallbackParam]
			}
			res.err = fmt.Errorf("the authorization server refused: %s", msg)
		case q.Get("code") == "" || len(q.Get("code")) > maxCallbackParam || len(q.Get("state")) > maxCallbackParam || len(q.Get("iss")) > maxCallbackParam:
			http.Error(w, "missing or oversized code", http.StatusBadRequest)
			return
		default:
			res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		}
		select {
		case cb.result <- res:
		default:
			http.Error(w, "this login is already answered", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != nil {
			fmt.Fprintf(w, "<p>toolhost: login failed: %s</p>", html.EscapeString(res.err.Error()))
			return
		}
		fmt.Fprint(w, "<p>toolhost: logged in. You can close this window.</p>")
	})
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 32 << 10}
	go func() {
		defer close(cb.done)
		cb.srv.Serve(ln)
	}()
	return cb
}

// wait returns the redirect's code, state and iss, or ctx's error.
func (cb *callback) wait(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case r := <-cb.result:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close stops the listener and waits for its goroutine.
func (cb *callback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if cb.srv.Shutdown(ctx) != nil {
		cb.srv.Close()
	}
	<-cb.done
}

// browserOpener opens a URL in the user's browser: the command in $BROWSER
// (words split on spaces; "%s" is replaced by the URL, else the URL is
// appended), else, on a terminal, xdg-open (open on macOS). It never
// fails: the URL is printed anyway.
type browserOpener struct {
	stderr      io.Writer
	disabled    bool
	interactive bool
	cmd         *exec.Cmd
	exited      chan struct{}
}

func (b *browserOpener) open(url string) {
	if b.disabled || b.cmd != nil {
		return
	}
	var argv []string
	if env := strings.Fields(os.Getenv("BROWSER")); len(env) > 0 {
		for _, a := range env {
			if strings.Contains(a, "%s") {
				argv = append(argv, strings.ReplaceAll(a, "%s", url))
			} else {
				argv = append(argv, a)
			}
		}
		if !strings.Contains(os.Getenv("BROWSER"), "%s") {
			argv = append(argv, url)
		}
	} else if b.interactive {
		opener := "xdg-open"
		if runtime.GOOS == "darwin" {
			opener = "open"
		}
		argv = []string{opener, url}
	} else {
		return
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(b.stderr, "(could not open a browser: %s)\n", esc(err))
		return
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func() {
		defer close(b.exited)
		cmd.Wait()
	}()
}

// wait reaps the browser command: an opener such as xdg-open exits at
// once; a browser started directly is left running after a while (it is
// the user's).
func (b *browserOpener) wait() {
	if b.cmd == nil {
		return
	}
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Release()
	}
}

// checkLogins is check's note on each OAuth server: whether a token is
// stored, or that `toolhost login NAME` is needed. Nothing is sent.
func (c *cli) checkLogins(cfg *config.Config) {
	store := &transport.FileTokenStore{}
	for _, n := range sortedNames(cfg.Servers) {
		s := cfg.Servers[n]
		if s.OAuth == nil || s.IsStdio() {
			continue
		}
		if s.OAuth.Grant == config.GrantClientCredentials {
			fmt.Fprintf(c.stdout, "oauth %s: client_credentials (client %s): tokens are fetched at start\n", n, esc(s.OAuth.ClientID))
			continue
		}
		key := transport.TokenKey{Server: n, URL: s.URL}
		st, err := store.Load(context.Background(), key)
		path, _ := store.Path(key)
		switch {
		case err != nil:
			fmt.Fprintf(c.stdout, "oauth %s: the stored token cannot be read (%s): run `toolhost login %s`\n", n, esc(err), n)
		case st == nil:
			fmt.Fprintf(c.stdout, "oauth %s: not logged in: run `toolhost login %s`\n", n, n)
		default:
			fmt.Fprintf(c.stdout, "oauth %s: logged in (token in %s)\n", n, path)
		}
	}
}
