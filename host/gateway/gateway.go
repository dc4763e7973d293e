// Package gateway serves a host.Host's policed catalogue as an MCP server:
// `toolhost serve`.
//
// It is built on the go-sdk server side. Every profile it serves is its own
// *mcp.Server, so one client never sees another profile's tools and
// list_changed notifications reach only the clients of the profile whose
// listing changed. The gateway is not a second host: every tools/call,
// prompts/get and resources/read goes through the Host's View of the
// client's profile, with its policy, validation, deadlines, supervision and
// audit (the audit record names the client, AuditRecord.Client).
//
// Transports: stdio (ServeStdio, for desktop clients that spawn toolhost)
// and Streamable HTTP at /mcp (Handler, Serve), in sessions or stateless
// ([serve] stateless). Over HTTP, [serve.clients.NAME] tokens map clients to
// profiles; /healthz and /readyz answer outside the token check, /metrics
// behind [serve] metrics_token when set. Limits against hostile HTTP
// clients (timeouts, connections per peer and in total, the Host check on
// loopback) are in front.go and Serve.
package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/gopool"
)

// Errors of the gateway.
var (
	// ErrUnauthenticated: Serve was asked to listen on an address other
	// than loopback with no [serve.clients] tokens and without
	// Options.AllowUnauthenticated: anyone who can reach the port would
	// get the catalogue.
	ErrUnauthenticated = errors.New("gateway: refusing to serve HTTP beyond loopback without client tokens")
)

// Client names used in audit records for clients that present no token.
const (
	ClientStdio = "stdio"
	ClientHTTP  = "http"
)

// Options configures a Gateway. Nil is valid.
type Options struct {
	// Logger receives the gateway's logs (default: a null logger).
	Logger hclog.Logger
	// Version is the server version clients see in initialize (default
	// "dev").
	Version string
	// Profile, when not empty, overrides [serve] profile: the view of a
	// client with no token.
	Profile string
	// AllowUnauthenticated lets Serve listen beyond loopback with no
	// client tokens (--allow-unauthenticated).
	AllowUnauthenticated bool
	// Reload, when set, is what POST /api/v1/reload (an admin action) runs:
	// read the configuration again and Host.Apply it. toolhost serve sets
	// it (and runs it on SIGHUP and, with --watch, on file changes). Its
	// error is a config.ErrorList when the new configuration is invalid
	// (nothing was changed), else Apply's. Nil: the endpoint answers 501.
	Reload func(ctx context.Context) (host.ApplyReport, error)
	// Logs, when set, serves GET /api/v1/servers/{name}/logs: the last
	// tail lines (at most 10,000) of a backend's log file ([host]
	// log_directory), oldest first, already redacted. An unknown backend
	// is an error wrapping host.ErrUnknownBackend; no log directory, one
	// wrapping ErrNoLogs. Nil: the endpoint answers 404 with ErrNoLogs.
	Logs func(name string, tail int) ([]string, error)
	// Metrics, when set, is served at GET /metrics (outside the client
	// token check; behind [serve] metrics_token when set) and follows the
	// Host's events; pass it to Relay too, before host.New, so that it
	// counts calls. Serve counts its connections in it.
	Metrics *Metrics
}

// Gateway serves one Host to MCP clients. Make one with New; Close it
// before the Host.
type Gateway struct {
	h      *host.Host
	serve  config.Serve // as at New: stateless, max_body, session_timeout
	opts   Options
	logger hclog.Logger

	cur     atomic.Pointer[served] // replaced whole by reconcile
	applyMu sync.Mutex             // serialises reconcile
	exposed atomic.Bool            // Serve listens beyond loopback: tokens required
	calls   inflight
	pending pendingSet
	guard   *guard   // per-client limits (guard.go)
	notify  notifier // per-session queues of broadcasts (notify.go)
	streams streams  // open HTTP response streams by session (notify.go)

	dash dashState // the dashboard's event streams (dashboard.go)

	code codeMode // code mode's Runner (codemode.go)

	unsubscribe func()
	detach      func()        // Metrics.Attach's
	kick        chan struct{} // buffered 1: a resync is due
	stop        chan struct{}
	done        chan struct{}
	closeOnce   sync.Once

	infoOnce sync.Once // serverInfoMeta
	infoMeta []byte
}

// served is what the gateway serves under one configuration of its Host:
// the configuration, the profile of a client with no token, one server per
// served profile ("" is the Host's own view) and the client tokens.
type served struct {
	cfg     *config.Config
	profile string
	servers map[string]*profileServer
	tokens  []token
}

// token is one client's bearer token, by its SHA-256 (compared in constant
// time; the token itself is not kept).
type token struct {
	sum     [sha256.Size]byte
	client  string
	profile string
	admin   bool // [serve.clients.NAME] admin
}

// New builds the MCP servers of every profile the gateway serves (the
// [serve] profile and every [serve.clients.NAME] profile of h.Config()),
// registers the Host's current catalogue on them and follows the Host's
// catalogue events from then on (and its configurations: Host.Apply changes
// the profiles and tokens served; [serve] stateless, max_body, the timeouts
// and limits stay as at New). Build h with options that Relay has set, so
// that its servers' requests reach the gateway's clients and
// Options.Metrics counts its calls. An unknown profile is an error wrapping
// host.ErrUnknownProfile.
func New(h *host.Host, opts *Options) (*Gateway, error) {
	cfg := h.Config()
	g := &Gateway{h: h, serve: cfg.Serve,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if opts != nil {
		g.opts = *opts
	}
	g.logger = g.opts.Logger
	if g.logger == nil {
		g.logger = hclog.NewNullLogger()
	}
	if g.opts.Version == "" {
		g.opts.Version = "dev"
	}
	g.guard = newGuard(g)
	g.pending.pool = gopool.New(httpIdleWorkers)
	if g.serve.MaxBody == 0 {
		g.serve.MaxBody = config.DefaultMaxBody
	}
	if g.serve.SessionTimeout == 0 {
		g.serve.SessionTimeout = config.Duration(config.DefaultSessionTimeout)
	}
	g.serve.ReadTimeout = cmp.Or(g.serve.ReadTimeout, config.Duration(config.DefaultReadTimeout))
	g.serve.IdleTimeout = cmp.Or(g.serve.IdleTimeout, config.Duration(config.DefaultIdleTimeout))
	g.serve.MaxConnections = cmp.Or(g.serve.MaxConnections, config.DefaultMaxConnections)
	g.serve.MaxConnectionsPerPeer = cmp.Or(g.serve.MaxConnectionsPerPeer, min(config.DefaultMaxConnectionsPerPeer, g.serve.MaxConnections))
	// Slow consumers (notify.go).
	if g.serve.WriteTimeout == 0 {
		g.serve.WriteTimeout = config.Duration(config.DefaultWriteTimeout)
	}
	if g.serve.NotifyQueue == 0 {
		g.serve.NotifyQueue = config.DefaultNotifyQueue
	}
	g.notify.g = g
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err := g.reconcile(ctx, cfg)
	cancel()
	if err != nil {
		g.code.close() // code mode (codemode.go): a Runner a first sync built
		return nil, err
	}
	g.unsubscribe = h.Subscribe(func(ev host.Event) {
		switch ev.Kind {
		case host.EventCatalogue, host.EventListChanged, host.EventState:
			select {
			case g.kick <- struct{}{}:
			default: // a resync is already due: changes coalesce
			}
		}
	})
	if g.opts.Metrics != nil {
		g.detach = g.opts.Metrics.Attach(h)
	}
	go g.resyncLoop()
	return g, nil
}

// reconcile makes the gateway serve what cfg says: a server for every
// profile of [serve] profile and [serve.clients] (those already served are
// kept, with their sessions), the tokens of cfg, and no server for a
// profile no longer served (its sessions are closed). A new server has the
// catalogue registered before any client can reach it. Stateless, max_body
// and session_timeout stay as at New. An unknown profile is an error
// wrapping host.ErrUnknownProfile, and nothing changes.
func (g *Gateway) reconcile(ctx context.Context, cfg *config.Config) error {
	g.applyMu.Lock()
	defer g.applyMu.Unlock()
	old := g.cur.Load()
	if old != nil && old.cfg == cfg {
		return nil
	}
	next := &served{cfg: cfg, profile: cfg.Serve.Profile, servers: map[string]*profileServer{}}
	var added []string
	if g.opts.Profile != "" {
		next.profile = g.opts.Profile
	}
	profiles := []string{next.profile}
	for _, name := range slices.Sorted(maps.Keys(cfg.Serve.Clients)) {
		c := cfg.Serve.Clients[name]
		next.tokens = append(next.tokens, token{sum: sha256.Sum256([]byte(c.Token)), client: name, profile: c.Profile, admin: c.Admin})
		profiles = append(profiles, c.Profile)
	}
	for _, p := range profiles {
		if _, ok := next.servers[p]; ok {
			continue
		}
		if old != nil && old.servers[p] != nil {
			next.servers[p] = old.servers[p]
			continue
		}
		var view host.Catalogue = g.h
		if p != "" {
			v, err := g.h.Profile(p)
			if err != nil {
				return err
			}
			view = v
		}
		next.servers[p] = g.newServer(p, view)
		added = append(added, p)
	}
	for _, p := range added {
		next.servers[p].sync(ctx, g.logger)
	}
	g.cur.Store(next)
	if old != nil {
		for p, ps := range old.servers {
			if next.servers[p] != nil {
				continue
			}
			g.logger.Info("profile no longer served; closing its sessions", "profile", p)
			for ss := range ps.srv.Sessions() {
				g.calls.end(func(c *call) bool { return c.ss == ss })
				ss.Close()
			}
		}
		if len(added) > 0 || len(next.servers) != len(old.servers) {
			g.logger.Info("served profiles changed", "profiles", slices.Sorted(maps.Keys(next.servers)), "clients", len(next.tokens))
		}
	}
	return nil
}

// resyncLoop brings every profile's server up to date after catalogue
// events, one resync for any number of events that arrived meanwhile. It
// first follows the Host's configuration (Host.Apply): profiles and tokens
// added to or removed from [serve] are served or dropped.
func (g *Gateway) resyncLoop() {
	defer close(g.done)
	for {
		select {
		case <-g.stop:
			return
		case <-g.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			select {
			case <-g.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := g.reconcile(ctx, g.h.Config()); err != nil {
			g.logger.Error("the new configuration's [serve] profiles cannot be served; serving the previous ones", "error", err)
		}
		g.syncAll(ctx)
		cancel()
	}
}

func (g *Gateway) syncAll(ctx context.Context) {
	servers := g.cur.Load().servers
	for _, p := range slices.Sorted(maps.Keys(servers)) {
		servers[p].sync(ctx, g.logger)
	}
}

// Close stops following the Host and ends every session of every profile
// (their calls in flight are cancelled), so that no goroutine of the
// gateway's outlives it; an HTTP client's next request in such a session
// is 404 (MCP 2025-11-25 basic/transports, "Session Management"). Close
// does not close the Host. It is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		if g.unsubscribe != nil {
			g.unsubscribe()
		}
		if g.detach != nil {
			g.detach()
		}
		close(g.stop)
		<-g.done
		g.code.close() // code mode (codemode.go)
		for _, ps := range g.cur.Load().servers {
			for ss := range ps.srv.Sessions() {
				g.calls.end(func(c *call) bool { return c.ss == ss })
				ss.Close()
			}
		}
		g.pending.pool.Close()
	})
	return nil
}

// ServeTransport runs one MCP session of the default profile on t until
// the client disconnects or ctx is done. Audit records name the client
// "stdio".
//
// When the connection ends (the client went away), calls still in flight
// are cancelled, and ServeTransport returns once they have.
//
// On an *mcp.IOTransport or *mcp.StdioTransport (stdio), a one-line
// tools/call of an initialized session is decoded, run through the same
// middlewares and tool handler, and answered by the gateway's own code
// rather than the go-sdk's (fast.go; FastPathEnv turns it off); everything
// else goes to the go-sdk unchanged.
func (g *Gateway) ServeTransport(ctx context.Context, t mcp.Transport) error {
	t, fast := g.fastTransport(ctx, t) // stdio: tools/call without the go-sdk (fast.go)
	nt := &closeNotifier{Transport: t, closed: make(chan struct{})}
	cur := g.cur.Load()
	ss, err := cur.servers[cur.profile].srv.Connect(ctx, nt, nil)
	if err != nil {
		return err
	}
	if hook := testHookBeforeBind.Load(); hook != nil {
		(*hook)()
	}
	fast.bind(cur.servers[cur.profile], ss)
	waited := make(chan error, 1)
	go func() { waited <- ss.Wait() }()
	select {
	case <-ctx.Done():
	case <-nt.closed:
	case err := <-waited:
		return err
	}
	g.calls.end(func(c *call) bool { return c.ss == ss })
	ss.Close()
	err = <-waited
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// ServeStdio is ServeTransport on the process's stdin and stdout (newline-delimited
// JSON-RPC, MCP 2025-11-25 basic/transports#stdio). Nothing else may write
// to stdout meanwhile: logs go to stderr.
func (g *Gateway) ServeStdio(ctx context.Context) error {
	return g.ServeTransport(ctx, &mcp.StdioTransport{})
}

// Handler returns the gateway's HTTP handler: Streamable HTTP at /mcp
// (behind the bearer-token check when [serve.clients] are defined, with
// http.CrossOriginProtection, bodies capped at [serve] max_body), and,
// outside the client-token check, GET /healthz (200 while the process
// serves), GET /readyz (200 when every backend a served profile requires
// is ready, else 503 naming them) and, with Options.Metrics, GET /metrics
// (Prometheus text format; 401 without [serve] metrics_token when one is
// set).
//
// On every path, a request that arrived on a loopback address with a
// Host header that is not loopback is refused with 403 (DNS rebinding:
// go-sdk's rule for /mcp, applied to all), and a response written before
// the request's body was read to its end closes the connection.
func (g *Gateway) Handler() http.Handler {
	// [serve] session_timeout is the guard's to keep (guard.posting): the
	// go-sdk's timer would not see the POSTs the fast path serves.
	mcpHandler := mcp.NewStreamableHTTPHandler(g.serverFor, &mcp.StreamableHTTPOptions{
		Stateless: g.serve.Stateless,
	})
	// Cross-origin check, then the request guard (ids, batches, sessions per
	// client: guard.go), then call tracking, whose DELETE cancels only what
	// the go-sdk will accept (guard.deleteAccepted), then a deadline on every
	// write to a stream ([serve] write_timeout: slow consumers, notify.go).
	var h http.Handler = g.writeDeadlines(g.fastHTTP(mcpHandler))
	h = http.NewCrossOriginProtection().Handler(g.guard.http(g.calls.track(h, g.guard.deleteAccepted)))
	h = limitBody(h, int64(g.serve.MaxBody))
	open := h
	authed := auth.RequireBearerToken(g.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	// Tokens may come and go with Host.Apply: the check applies while
	// there are any.
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case len(g.cur.Load().tokens) > 0:
			authed.ServeHTTP(w, r)
		case g.exposed.Load():
			http.Error(w, "no [serve.clients] tokens are configured any more; refusing to serve beyond loopback", http.StatusServiceUnavailable)
		default:
			open.ServeHTTP(w, r)
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	g.routes(mux)
	if g.opts.Metrics != nil {
		mux.Handle("GET /metrics", requireBearer(func() string { return g.cur.Load().cfg.Serve.MetricsToken }, "metrics", g.opts.Metrics.Handler()))
	}
	return front(mux)
}

// Serve serves Handler on ln until ctx is done, then shuts down, giving
// requests in flight up to 5 seconds. Without client tokens it refuses a
// listener that is not on loopback (ErrUnauthenticated) unless
// Options.AllowUnauthenticated.
//
// Limits, from [serve] as at New: at most max_connections connections at
// once and max_connections_per_peer from one peer IP (IPv6: one /64); a
// connection over either is closed as soon as it is accepted. A request's
// headers must arrive within 10s and the whole request within
// read_timeout; a keep-alive connection idle for idle_timeout is closed.
// There is no write timeout: responses stream for as long as a call runs.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if !g.opts.AllowUnauthenticated && !isLoopback(ln.Addr()) {
		if len(g.cur.Load().tokens) == 0 {
			return fmt.Errorf("%w: %s is reachable from other machines; define [serve.clients.NAME] tokens, listen on 127.0.0.1, or pass --allow-unauthenticated", ErrUnauthenticated, ln.Addr())
		}
		g.exposed.Store(true)
	}
	srv := &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: min(readHeaderTimeout, g.serve.ReadTimeout.Std()),
		// ReadTimeout bounds headers and body together; net/http lifts the
		// deadline once the body is read, so streams are not cut.
		ReadTimeout: g.serve.ReadTimeout.Std(),
		IdleTimeout: g.serve.IdleTimeout.Std(),
		// No WriteTimeout: it would cut the SSE streams (GET /mcp, streamed
		// POST responses) of calls that run long.
		ErrorLog: g.logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	ln = newLimitListener(ln, g.serve.MaxConnections, g.serve.MaxConnectionsPerPeer, g.logger, g.opts.Metrics)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	<-errc
	return err
}

// readHeaderTimeout bounds the arrival of a request's headers.
const readHeaderTimeout = 10 * time.Second

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// verify checks a bearer token against every client's, in constant time,
// and names the client and its profile.
func (g *Gateway) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(tok))
	var match *token
	tokens := g.cur.Load().tokens
	for i := range tokens {
		if subtle.ConstantTimeCompare(sum[:], tokens[i].sum[:]) == 1 {
			match = &tokens[i]
		}
	}
	if match == nil {
		return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: match.client, Extra: map[string]any{"profile": match.profile, "admin": match.admin}}, nil
}

// serverFor picks the server of the request's client's profile.
func (g *Gateway) serverFor(r *http.Request) *mcp.Server {
	cur := g.cur.Load()
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		if p, ok := ti.Extra["profile"].(string); ok {
			if ps, ok := cur.servers[p]; ok {
				return ps.srv
			}
		}
	}
	return cur.servers[cur.profile].srv
}

// clientName names the client of a request for the audit record.
func clientName(extra *mcp.RequestExtra) string {
	switch {
	case extra == nil || extra.Header == nil:
		return ClientStdio
	case extra.TokenInfo != nil && extra.TokenInfo.UserID != "":
		return extra.TokenInfo.UserID
	}
	return ClientHTTP
}

// limitBody refuses a body larger than max with 413, and caps what a
// handler can read of one whose length is not declared.
func limitBody(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes ([serve] max_body)", r.ContentLength, max), http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}

// readyz reports 200 when every backend required by a served profile is
// ready.
func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	required := map[string]bool{}
	cur := g.cur.Load()
	for p := range cur.servers {
		if prof := cur.cfg.Profiles[p]; prof != nil {
			for _, b := range prof.Requires {
				required[b] = true
			}
		}
	}
	type notReady struct {
		Backend string `json:"backend"`
		State   string `json:"state"`
	}
	var down []notReady
	for _, st := range g.h.Status() {
		if required[st.Name] && st.State != host.StateReady {
			down = append(down, notReady{st.Name, string(st.State)})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if len(down) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ready": len(down) == 0, "not_ready": down})
}
