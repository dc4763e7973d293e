package gateway

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host"
)

// The dashboard (see routes.go): GET / renders the backends, a per-tool
// summary and the last audit records (html/template: every string a
// server or client supplied is escaped), /static/ serves its stylesheet
// and script (embedded: no CDN, no build step), POST /login and
// /logout keep a token in the TokenCookie, GET /api/v1/events streams
// changes (Server-Sent Events), GET /api/v1/audit lists the audit ring.
//
// Who sees what: every authenticated caller sees every backend's state
// (as toolhost status does) and the tools of its own profile; an admin
// sees every client's audit records, a non-admin only its own client's
// (GET /api/v1/audit?client=OTHER is 403 for it). The restart, enable and
// disable buttons are shown to admins only (the endpoints refuse others
// anyway).

//go:embed dashboard
var dashboardFiles embed.FS

// The page templates are parsed at their first use, not at init: every
// toolhost command links this package (issue 26, item 3).
var (
	pageTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("index.html.tmpl").Funcs(template.FuncMap{
			"ms":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
			"uptime": formatUptime,
			"when":   func(t time.Time) string { return t.UTC().Format("15:04:05") },
		}).ParseFS(dashboardFiles, "dashboard/index.html.tmpl"))
	})
	loginTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.ParseFS(dashboardFiles, "dashboard/login.html.tmpl"))
	})
)

const (
	// MaxEventStreams is how many GET /api/v1/events streams one client
	// (a [serve.clients.NAME], or every anonymous caller together) may
	// have open at once; one more is refused with 429.
	MaxEventStreams = 8
	// EventQueue is how many events wait for one stream's client; a
	// client that falls further behind is dropped (its stream ends).
	EventQueue = 64
	// dashboardAuditRows is how many audit records the page shows.
	dashboardAuditRows = 50
	// maxAuditLimit bounds GET /api/v1/audit?limit=.
	maxAuditLimit = AuditRingSize
	// defaultAuditLimit is GET /api/v1/audit's limit when none is given.
	defaultAuditLimit = 100
)

// heartbeat is the interval of the comment line an idle event stream
// gets, so that proxies and clients see it is alive.
var heartbeat = 15 * time.Second

// contentSecurityPolicy is the dashboard's CSP: its own origin only, no
// inline script or style, no framing, forms post only to itself.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// pageHeaders sets the headers of every dashboard response: CSP,
// nosniff, no framing (X-Frame-Options for browsers without
// frame-ancestors), no referrer, no caching.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// dashState is the Gateway's count of event streams per client.
type dashState struct {
	mu      sync.Mutex
	streams map[string]int
	// shutdown has a channel per *http.Server serving the gateway, closed
	// when that server shuts down (Serve), so streams end then.
	shutdown map[*http.Server]chan struct{}
}

// acquire counts one more stream for client, or returns false at
// MaxEventStreams.
func (d *dashState) acquire(client string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.streams == nil {
		d.streams = map[string]int{}
	}
	if d.streams[client] >= MaxEventStreams {
		return false
	}
	d.streams[client]++
	return true
}

func (d *dashState) release(client string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.streams[client]--; d.streams[client] <= 0 {
		delete(d.streams, client)
	}
}

// shutdownOf returns a channel closed when srv shuts down (nil: never).
func (d *dashState) shutdownOf(srv *http.Server) <-chan struct{} {
	if srv == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shutdown == nil {
		d.shutdown = map[*http.Server]chan struct{}{}
	}
	ch, ok := d.shutdown[srv]
	if !ok {
		ch = make(chan struct{})
		d.shutdown[srv] = ch
		srv.RegisterOnShutdown(func() {
			d.mu.Lock()
			delete(d.shutdown, srv)
			d.mu.Unlock()
			close(ch)
		})
	}
	return ch
}

// pageCaller authenticates a dashboard request like the API (a bearer
// token, else the TokenCookie) without writing an error: ok is false
// when tokens are configured and none valid was given (presented tells
// whether one was given at all).
func (g *Gateway) pageCaller(r *http.Request) (c Caller, ok, presented bool) {
	cur := g.cur.Load()
	if len(cur.tokens) == 0 {
		return Caller{Client: ClientHTTP, Profile: cur.profile, Admin: true}, !g.exposed.Load(), false
	}
	tok, fromHeader := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !fromHeader {
		if ck, err := r.Cookie(TokenCookie); err == nil {
			tok = ck.Value
		}
	}
	if tok == "" {
		return Caller{}, false, false
	}
	ti, err := g.verify(r.Context(), tok, r)
	if err != nil {
		return Caller{}, false, true
	}
	return callerOf(ti), true, true
}

// dashboardAuth serves the login page instead of next when tokens are
// configured and the request has no valid token (200 with none, 401 with
// a wrong one); otherwise it puts the Caller in the context.
func (g *Gateway) dashboardAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		c, ok, presented := g.pageCaller(r)
		if !ok {
			if len(g.cur.Load().tokens) == 0 { // exposed without tokens
				WriteError(w, http.StatusServiceUnavailable, "unavailable", "no [serve.clients] tokens are configured any more; refusing to serve beyond loopback")
				return
			}
			code, msg := http.StatusOK, ""
			if presented {
				code, msg = http.StatusUnauthorized, "That token is not valid here."
			}
			loginPage(w, code, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func loginPage(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = loginTmpl().Execute(w, map[string]string{"Message": msg})
}

// login takes the token of a [serve.clients.NAME] from a form (field
// "token", application/x-www-form-urlencoded, at most 4 KiB), and when it
// is valid keeps it in the TokenCookie (HttpOnly, SameSite=Strict,
// Path=/, Secure over TLS, for the browser session) and redirects to /
// (303). A wrong token gets the login page again with 401 and no cookie.
// Cross-origin posts are refused (403): another site cannot log a browser
// in as its own client.
func (g *Gateway) login(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		if err := r.ParseForm(); err != nil {
			w.Header().Set("Connection", "close")
			loginPage(w, http.StatusBadRequest, "The form could not be read: "+err.Error())
			return
		}
		if len(g.cur.Load().tokens) == 0 {
			http.Redirect(w, r, "/", http.StatusSeeOther) // nothing to log in to
			return
		}
		tok := r.PostForm.Get("token")
		if _, err := g.verify(r.Context(), tok, r); tok == "" || err != nil {
			loginPage(w, http.StatusUnauthorized, "That token is not valid here.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: tok, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})).ServeHTTP(w, r)
}

// logout clears the TokenCookie and redirects to / (303).
func (g *Gateway) logout(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})).ServeHTTP(w, r)
}

// static serves the dashboard's stylesheet and script (no directory
// listings).
func (g *Gateway) static() http.Handler {
	sub, err := fs.Sub(dashboardFiles, "dashboard/static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		w.Header().Set("Cache-Control", "no-cache")
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// page is what index.html.tmpl renders.
type page struct {
	Caller   Caller
	Tokens   bool // tokens are configured: show the logout button
	Backends []host.BackendStatus
	Tools    []pageTool
	Audit    []host.AuditRecord
	Filter   auditFilter
	Outcomes []string
	ToolsErr string
}

// pageTool is one row of the per-tool table.
type pageTool struct {
	Name, Backend, Description string
	toolStat
}

var outcomes = []string{host.OutcomeOK, host.OutcomeToolError, host.OutcomeDenied, host.OutcomeInvalidArguments,
	host.OutcomeTimeout, host.OutcomeCanceled, host.OutcomeBackendError, host.OutcomeUnknownTool, host.OutcomeCircuitOpen,
	host.OutcomeRateLimited}

// auditFilter selects audit records: each field empty or equal.
type auditFilter struct{ Tool, Client, Outcome string }

func (f auditFilter) match(r *host.AuditRecord) bool {
	return (f.Tool == "" || r.Tool == f.Tool) && (f.Client == "" || r.Client == f.Client) && (f.Outcome == "" || r.Outcome == f.Outcome)
}

// filterFrom reads tool, client and outcome from r's query, and holds a
// non-admin to its own client. It writes a 400 (unknown outcome) or 403
// (another client's records) and returns false on refusal.
func filterFrom(w http.ResponseWriter, r *http.Request, c Caller) (auditFilter, bool) {
	q := r.URL.Query()
	f := auditFilter{Tool: q.Get("tool"), Client: q.Get("client"), Outcome: q.Get("outcome")}
	if f.Outcome != "" && !slices.Contains(outcomes, f.Outcome) {
		WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("unknown outcome %q (one of: %s)", f.Outcome, strings.Join(outcomes, ", ")))
		return f, false
	}
	if !c.Admin {
		if f.Client != "" && f.Client != c.Client {
			WriteError(w, http.StatusForbidden, "forbidden", "a client that is not an admin sees only its own audit records")
			return f, false
		}
		f.Client = c.Client
	}
	return f, true
}

func (g *Gateway) ring() *auditRing {
	if g.opts.Metrics == nil {
		return nil
	}
	return g.opts.Metrics.ring
}

// dashboard renders the page: GET /?tool=&client=&outcome= filter the
// audit table.
func (g *Gateway) dashboard(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	if !CheckQuery(w, r, "tool", "client", "outcome") {
		return
	}
	f, ok := filterFrom(w, r, c)
	if !ok {
		return
	}
	p := page{Caller: c, Tokens: len(g.cur.Load().tokens) > 0, Backends: g.h.Status(), Filter: f, Outcomes: outcomes}
	var all []host.AuditRecord
	if ring := g.ring(); ring != nil {
		mine := func(rec *host.AuditRecord) bool { return c.Admin || rec.Client == c.Client }
		all = ring.last(AuditRingSize, mine)
		p.Audit = ring.last(dashboardAuditRows, func(rec *host.AuditRecord) bool { return mine(rec) && f.match(rec) })
	}
	stats := map[string]toolStat{}
	for _, s := range ringToolStats(all) {
		stats[s.Tool] = s
	}
	var view host.Catalogue = g.h
	if c.Profile != "" {
		if v, err := g.h.Profile(c.Profile); err == nil {
			view = v
		}
	}
	tools, err := view.Tools(r.Context())
	if err != nil {
		p.ToolsErr = err.Error()
	}
	for _, t := range tools {
		p.Tools = append(p.Tools, pageTool{Name: t.Name, Backend: t.Backend, Description: t.Description, toolStat: stats[t.Name]})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTmpl().Execute(w, p); err != nil {
		g.logger.Warn("dashboard: rendering the page", "error", err)
	}
}

// formatUptime renders seconds as "3d4h", "2h5m", "4m10s" or "12s".
func formatUptime(sec float64) string {
	if sec <= 0 {
		return "-"
	}
	d := time.Duration(sec) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// auditRecords serves GET /api/v1/audit?tool=&client=&outcome=&limit=:
// {"records": [host.AuditRecord, ...]}, newest first, at most limit
// (1..1000, default 100) of the gateway's ring (the last AuditRingSize
// records; empty without Options.Metrics). A non-admin caller gets only
// its own client's records. Errors: 400 for an unknown parameter, a bad
// limit or an unknown outcome; 403 for a non-admin's client=OTHER.
func (g *Gateway) auditRecords(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	if !CheckQuery(w, r, "tool", "client", "outcome", "limit") {
		return
	}
	limit := defaultAuditLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAuditLimit {
			WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("limit must be an integer from 1 to %d, not %q", maxAuditLimit, s))
			return
		}
		limit = n
	}
	f, ok := filterFrom(w, r, c)
	if !ok {
		return
	}
	recs := []host.AuditRecord{}
	if ring := g.ring(); ring != nil {
		recs = ring.last(limit, f.match)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"records": recs})
}

// HostEvent is the data of the host events of GET /api/v1/events (the
// SSE event type is Kind): host.Event as JSON, with the error as text and,
// for an event about a backend, its status after the event.
type HostEvent struct {
	Time    time.Time           `json:"time"`
	Kind    host.EventKind      `json:"kind"`
	Backend string              `json:"backend,omitempty"`
	Tool    string              `json:"tool,omitempty"`
	State   host.State          `json:"state,omitempty"`
	Circuit string              `json:"circuit,omitempty"`
	Added   []string            `json:"added,omitempty"`
	Removed []string            `json:"removed,omitempty"`
	List    string              `json:"list,omitempty"`
	Error   string              `json:"error,omitempty"`
	Status  *host.BackendStatus `json:"status,omitempty"`
}

func (g *Gateway) hostEvent(ev host.Event) HostEvent {
	he := HostEvent{Time: ev.Time.UTC(), Kind: ev.Kind, Backend: ev.Backend, Tool: ev.Tool, State: ev.State,
		Circuit: ev.Circuit, Added: ev.Added, Removed: ev.Removed, List: string(ev.List)}
	if ev.Err != nil {
		he.Error = ev.Err.Error()
	}
	if ev.Backend != "" {
		for _, st := range g.h.Status() {
			if st.Name == ev.Backend {
				he.Status = &st
				break
			}
		}
	}
	return he
}

// events serves GET /api/v1/events: a text/event-stream (WHATWG HTML,
// "Server-sent events") of the host's events, event types "state",
// "health", "circuit", "catalogue" and "list_changed" (data: HostEvent),
// and of each new audit record, event type "audit" (data:
// host.AuditRecord; a non-admin gets only its own client's), with a
// comment line every 15 s when idle. A client that does not read is
// dropped: at most EventQueue events wait for it, and each write must
// finish within [serve] write_timeout. At most MaxEventStreams streams per
// client (429 beyond). The stream ends when the Gateway is closed or its
// server shuts down.
func (g *Gateway) events(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	if !CheckQuery(w, r) {
		return
	}
	if !g.dash.acquire(c.Client) {
		WriteError(w, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("client %q has %d event streams open already (the most one client may have)", c.Client, MaxEventStreams))
		return
	}
	defer g.dash.release(c.Client)

	q := make(chan []byte, EventQueue)
	overflow := make(chan struct{})
	var once sync.Once
	push := func(event string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		frame := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data)
		select {
		case q <- frame:
		default:
			once.Do(func() { close(overflow) })
		}
	}
	unsubscribe := g.h.Subscribe(func(ev host.Event) { push(string(ev.Kind), g.hostEvent(ev)) })
	defer unsubscribe()
	if ring := g.ring(); ring != nil {
		cancel := ring.subscribe(func(rec host.AuditRecord) {
			if c.Admin || rec.Client == c.Client {
				push("audit", rec)
			}
		})
		defer cancel()
	}

	rc := http.NewResponseController(w)
	timeout := g.serve.WriteTimeout.Std()
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if write([]byte("retry: 2000\n: toolhost events\n\n")) != nil {
		return
	}
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	shutdown := g.dash.shutdownOf(srv)
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case frame := <-q:
			if err := write(frame); err != nil {
				g.logger.Debug("events: dropping a stream", "client", c.Client, "error", err)
				return
			}
		case <-tick.C:
			if write([]byte(": heartbeat\n\n")) != nil {
				return
			}
		case <-overflow:
			g.logger.Debug("events: dropping a stream that does not keep up", "client", c.Client)
			return
		case <-r.Context().Done():
			return
		case <-g.stop:
			return
		case <-shutdown:
			return
		}
	}
}
