package gateway

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// profileServer is the MCP server of one profile, and what was last
// registered on it (by name or URI, with a fingerprint of each item so
// that a changed item is registered again and an unchanged one is not).
type profileServer struct {
	profile string
	view    host.Catalogue
	srv     *mcp.Server
	calls   *inflight // the gateway's

	mu        sync.Mutex // serialises sync
	tools     map[string]string
	prompts   map[string]string
	resources map[string]string
	templates map[string]string
	// dupLogged holds the duplicate resources and templates already
	// warned about (kind, URI and the skipped backend), so that every
	// resync does not warn again; bounded by the backends' lists.
	dupLogged map[[3]string]bool

	levels  logLevels   // the clients' logging/setLevel
	pending *pendingSet // calls of 2026-07-28 clients between rounds (mrtr.go)
	// statelessLevel is the level of a client session that set none
	// over stateless HTTP: the go-sdk gives each request a session whose
	// level is "info" ([serve] stateless); "" otherwise.
	statelessLevel mcp.LoggingLevel

	// coming is host.Host.Coming: whether a tool not listed may belong to
	// a backend still coming up (see callComing).
	coming func(name string) bool

	servedMu sync.RWMutex
	served   map[string]bool // the resource URIs served now: what a client may subscribe to

	// Tool search (issue 27; search.go): catalogue = "search".
	search searchState

	// The stdio fast path (fast.go): the catalogue tools sync registered
	// now (ps.callTool's), for lookups that must not wait for sync.
	fastTools atomic.Pointer[map[string]bool]

	// Code mode (codemode.go): the gateway (its Runner, its Host), and
	// run_code's registered definition ("" when not served).
	g          *Gateway
	codeFP     string
	codeWarned bool

	// receiving is the server's receiving middleware, in the order added
	// (the last outermost), kept for the stdio fast path's chain.
	receiving []mcp.Middleware
}

func (g *Gateway) newServer(profile string, view host.Catalogue) *profileServer {
	ps := &profileServer{profile: profile, view: view, calls: &g.calls, pending: &g.pending,
		tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}, served: map[string]bool{}}
	ps.srv = mcp.NewServer(g.impl(), &mcp.ServerOptions{
		// Declared even while the profile has none of a kind: they may
		// come, announced by list_changed.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			// Answered by the backend that serves the prompt or
			// resource; one that cannot complete gives an error.
			Completions: &mcp.CompletionCapabilities{},
			// A backend's log messages during a client's call are
			// relayed at the level that client set (logging.go).
			Logging: &mcp.LoggingCapabilities{},
		},
		CompletionHandler:  ps.complete,
		SubscribeHandler:   ps.subscribe,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	ps.coming = g.h.Coming
	ps.g = g                         // code mode (codemode.go)
	ps.search.config = g.h.Config    // tool search (search.go)
	ps.receiving = []mcp.Middleware{ // the last outermost; the stdio fast path runs the same (fast.go fastChain)
		ps.trackLevels,
		ps.callComing,
		ps.callHidden,          // tool search: tools/call of tools search mode does not list
		g.guard.middleware(ps), // max_concurrent, versions (guard.go)
	}
	for _, mw := range ps.receiving {
		// One at a time: each wraps the ones before it (one variadic
		// call would make the first outermost instead).
		ps.srv.AddReceivingMiddleware(mw)
	}
	ps.srv.AddSendingMiddleware(g.notify.sending) // broadcasts queued per session (notify.go)
	if g.serve.Stateless {
		ps.statelessLevel = "info"
	}
	return ps
}

// subscribe accepts resources/subscribe (MCP 2025-11-25 server/resources,
// "Subscriptions") for a URI the profile serves now, and refuses any other
// with mcp.ResourceNotFoundError (code -32602, invalid params, SEP-2164), so
// that a client cannot make the gateway keep subscriptions to arbitrary
// URIs: at most one per served resource and session. The go-sdk server keeps the subscription until
// resources/unsubscribe or the end of the session. A subscriber receives
// notifications/resources/updated when the resource as its backend lists it
// changes (its size, MIME type, title...: what a resources/list_changed
// from the backend brings). A backend's own notifications/resources/updated
// are not relayed yet: the host's transports do not surface them.
func (ps *profileServer) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	ps.servedMu.RLock()
	ok := ps.served[req.Params.URI]
	ps.servedMu.RUnlock()
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	return nil
}

// fingerprint is v's JSON encoding: equal for items that look the same to
// a client.
func fingerprint(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sync registers what the view lists now and removes what it no longer
// lists; the go-sdk server sends list_changed to its sessions for each
// kind that changed. A listing that fails leaves that kind as it was.
func (ps *profileServer) sync(ctx context.Context, logger hclog.Logger) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	logger = logger.With("profile", ps.profile)

	if tools, err := ps.view.Tools(ctx); err != nil {
		logger.Warn("tools/list for the gateway failed", "error", err)
	} else {
		tools = ps.searchSync(tools, logger) // tool search (search.go): in search mode, the meta-tools and the always tools
		seen := map[string]bool{}
		for _, t := range tools {
			seen[t.Name] = true
			tool, ok := forClients(t.Tool)
			if !ok {
				logger.Warn("tool not served: its inputSchema is not an object schema", "tool", t.Name)
				continue
			}
			fp := fingerprint(tool)
			if ps.tools[t.Name] == fp {
				continue
			}
			ps.tools[t.Name] = fp
			ps.srv.AddTool(tool, ps.callTool(t.Name))
		}
		if gone := missing(ps.tools, seen); len(gone) > 0 {
			ps.srv.RemoveTools(gone...)
		}
		ps.syncCodeMode(tools, logger) // code mode (codemode.go)
		ps.fastPublish()               // the stdio fast path's view of the tools (fast.go)
	}

	if prompts, err := ps.view.Prompts(ctx); err != nil {
		logger.Warn("prompts/list for the gateway failed", "error", err)
	} else {
		seen := map[string]bool{}
		for _, p := range prompts {
			seen[p.Name] = true
			fp := fingerprint(p.Prompt)
			if ps.prompts[p.Name] == fp {
				continue
			}
			ps.prompts[p.Name] = fp
			ps.srv.AddPrompt(p.Prompt, ps.getPrompt(p.Name))
		}
		if gone := missing(ps.prompts, seen); len(gone) > 0 {
			ps.srv.RemovePrompts(gone...)
		}
	}

	var updated []string // resources listed before and now listed differently
	if resources, err := ps.view.Resources(ctx); err != nil {
		logger.Warn("resources/list for the gateway failed", "error", err)
	} else {
		seen := map[string]bool{}
		for _, r := range resources {
			if seen[r.URI] {
				// Two backends list one URI: the first (by backend
				// name) serves it.
				if ps.firstDup("resource", r.URI, r.Backend) {
					logger.Warn("resource listed by more than one backend; serving the first", "uri", r.URI, "skipped", r.Backend)
				}
				continue
			}
			seen[r.URI] = true
			fp := r.Backend + "\x00" + fingerprint(r.Resource)
			old, known := ps.resources[r.URI]
			if old == fp {
				continue
			}
			ps.resources[r.URI] = fp
			ps.srv.AddResource(r.Resource, ps.readResource(r.Backend))
			if known {
				updated = append(updated, r.URI)
			}
		}
		if gone := missing(ps.resources, seen); len(gone) > 0 {
			ps.srv.RemoveResources(gone...)
		}
		ps.servedMu.Lock()
		ps.served = seen
		ps.servedMu.Unlock()
	}
	if templates, err := ps.view.ResourceTemplates(ctx); err != nil {
		logger.Warn("resources/templates/list for the gateway failed", "error", err)
	} else {
		seen := map[string]bool{}
		for _, t := range templates {
			if seen[t.URITemplate] {
				if ps.firstDup("template", t.URITemplate, t.Backend) {
					logger.Warn("resource template listed by more than one backend; serving the first", "uriTemplate", t.URITemplate, "skipped", t.Backend)
				}
				continue
			}
			fp := t.Backend + "\x00" + fingerprint(t.ResourceTemplate)
			if ps.templates[t.URITemplate] == fp {
				seen[t.URITemplate] = true
				continue
			}
			if !addTemplate(ps.srv, t.ResourceTemplate, ps.readResource(t.Backend)) {
				logger.Warn("resource template not served: not a valid absolute URI template (RFC 6570)", "uriTemplate", t.URITemplate, "backend", t.Backend)
				continue
			}
			seen[t.URITemplate] = true
			ps.templates[t.URITemplate] = fp
		}
		if gone := missing(ps.templates, seen); len(gone) > 0 {
			ps.srv.RemoveResourceTemplates(gone...)
		}
	}

	for _, uri := range updated {
		// The go-sdk server sends it to the sessions subscribed to uri.
		_ = ps.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// addTemplate registers t on srv, and reports false instead of letting the
// go-sdk panic on a URI template that is not valid or not absolute (a
// backend's template is hostile input).
func addTemplate(srv *mcp.Server, t *mcp.ResourceTemplate, h mcp.ResourceHandler) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	srv.AddResourceTemplate(t, h)
	return true
}

// complete answers completion/complete through the profile's view (MCP
// 2025-11-25 server/utilities/completion).
func (ps *profileServer) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ctx = host.WithClient(ctx, clientName(req.Extra))
	return ps.view.Complete(ctx, req.Params)
}

// missing deletes from registered the keys not in seen and returns them.
func missing(registered map[string]string, seen map[string]bool) []string {
	var gone []string
	for _, k := range slices.Sorted(maps.Keys(registered)) {
		if !seen[k] {
			gone = append(gone, k)
			delete(registered, k)
		}
	}
	return gone
}

// forClients returns the tool as the go-sdk server can register it: its
// inputSchema an object schema. A schema without "type" gets "type":
// "object" (MCP 2025-11-25 server/tools requires an object schema); one of
// another type is refused (ok false) rather than made to panic AddTool.
func forClients(t *mcp.Tool) (*mcp.Tool, bool) {
	var m map[string]any
	b, err := json.Marshal(t.InputSchema)
	if err != nil || json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	switch typ, ok := m["type"]; {
	case !ok:
		m["type"] = "object"
	case typ != "object":
		return nil, false
	}
	cp := *t
	cp.InputSchema = m
	return &cp, true
}

func (ps *profileServer) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx = withSession(host.WithClient(ctx, clientName(req.Extra)), req.Session)
		ctx = traced(ctx, req.Params.Meta, req.Session)
		ctx, bad := withIdempotencyKey(ctx, req.Params.Meta) // issue 25, item 5
		if bad != nil {
			return bad, nil
		}
		ctx, done := ps.calls.begin(ctx, req.Session, req.Extra)
		defer done()
		var args any = json.RawMessage("{}")
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		tok := req.Params.GetProgressToken()
		level := ps.logLevel(req)
		if (tok != nil || level != "") && req.Session != nil {
			// The client asked for progress or logs: ask the backend too,
			// and relay its reports (under the client's token) and its
			// log messages, in order, before the result.
			r := startRelay(ctx, req.Session)
			if r.stream = fastStreamIn(ctx); r.stream != nil {
				// A call of the HTTP fast path: on its stream (fasthttp.go),
				// at the level the session has when each message comes.
				r.level = func() mcp.LoggingLevel { return ps.logLevel(req) }
			}
			if tok != nil {
				ctx = host.WithProgress(ctx, r.progress(tok))
			}
			if level != "" {
				ctx = host.WithLog(ctx, level, r.log)
			}
			defer r.stop()
		}
		call := func(ctx context.Context) (*mcp.CallToolResult, error) {
			res, err := ps.view.CallTool(ctx, name, args)
			if err != nil {
				// A call that could not be made is a tool execution
				// error for the model to read (MCP 2025-11-25
				// server/tools, "Error Handling"), not a protocol error.
				return errorResult(err), nil
			}
			return withoutUpstreamMeta(res), nil
		}
		if usesInputRequests(req) && req.Session != nil {
			// A 2026-07-28 client gets an upstream server's requests
			// in the call's result (mrtr.go).
			return ps.multiRound(ctx, req, clientName(req.Extra), call)
		}
		return call(ctx)
	}
}

// callComing passes a tools/call of a tool not listed yet to the host when
// a backend still coming up may own it (host.Host.Coming: its first start
// failed and it is waiting out its restart backoff, or it is starting): the
// call waits for that backend within its deadline, as a listed tool's call
// waits for a restart, and its outcome is a result (an isError one saying
// why and when the next start attempt is, if the backend is not ready in
// time). Any other name the go-sdk server does not list gets its
// unknown-tool error, as before.
func (ps *profileServer) callComing(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil || !ps.coming(r.Params.Name) {
			return next(ctx, method, req)
		}
		return ps.callTool(r.Params.Name)(ctx, r)
	}
}

// withoutUpstreamMeta returns res without the reserved _meta keys
// ("io.modelcontextprotocol/...", MCP 2025-11-25 basic, "_meta") that the
// backend set about its own session (its serverInfo, say): the client's
// session is with the gateway.
func withoutUpstreamMeta(res *mcp.CallToolResult) *mcp.CallToolResult {
	reserved := false
	for k := range res.Meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			reserved = true
			break
		}
	}
	if !reserved {
		return res
	}
	cp := *res
	cp.Meta = mcp.Meta{}
	for k, v := range res.Meta {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			cp.Meta[k] = v
		}
	}
	if len(cp.Meta) == 0 {
		cp.Meta = nil
	}
	return &cp
}

func (ps *profileServer) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ctx = traced(host.WithClient(ctx, clientName(req.Extra)), req.Params.Meta, req.Session)
		res, err := ps.view.GetPrompt(ctx, name, req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", name, err)
		}
		return res, nil
	}
}

func (ps *profileServer) readResource(backend string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ctx = traced(host.WithClient(ctx, clientName(req.Extra)), req.Params.Meta, req.Session)
		return ps.view.ReadResource(ctx, backend, req.Params.URI)
	}
}

// relay sends a backend's progress reports (notifications/progress with the
// client's progressToken, MCP 2025-11-25 basic/utilities/progress) and log
// messages (notifications/message, server/utilities/logging) to the
// gateway's client, in the order they came, from a goroutine of its own:
// the host's callbacks must not block, so they queue (up to 64; one that
// finds the queue full is dropped: a progress report is superseded by the
// next anyway, and a server that floods logs loses some).
type relay struct {
	mu     sync.Mutex
	queue  chan func()
	closed bool
	done   chan struct{}
	ctx    context.Context
	ss     *mcp.ServerSession
	stream *fastStream             // progress and logs go here rather than through ss when set
	level  func() mcp.LoggingLevel // with stream: the client's level now
}

func startRelay(ctx context.Context, ss *mcp.ServerSession) *relay {
	r := &relay{queue: make(chan func(), 64), done: make(chan struct{}), ctx: ctx, ss: ss}
	go func() {
		defer close(r.done)
		for f := range r.queue {
			f()
		}
	}()
	return r
}

func (r *relay) send(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.queue <- f:
	default:
	}
}

// progress returns the host callback that relays reports under token.
func (r *relay) progress(token any) func(host.Progress) {
	return func(p host.Progress) {
		r.send(func() {
			params := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message}
			if r.stream != nil {
				_ = r.stream.notify("notifications/progress", params)
				return
			}
			_ = r.ss.NotifyProgress(r.ctx, params)
		})
	}
}

// log relays one log message; the go-sdk sends it only at or above the
// level the client set (logging/setLevel, or the request's
// io.modelcontextprotocol/logLevel from protocol 2026-07-28).
func (r *relay) log(p *mcp.LoggingMessageParams) {
	cp := *p
	r.send(func() {
		if r.stream != nil {
			// As the go-sdk's ServerSession.Log: nothing without a
			// level, nothing below it.
			if l := r.level(); l != "" && compareLevels(cp.Level, l) >= 0 {
				_ = r.stream.notify("notifications/message", &cp)
			}
			return
		}
		_ = r.ss.Log(r.ctx, &cp)
	})
}

// stop sends what is queued, so that everything relayed reaches the client
// before the result, and ends the relay.
func (r *relay) stop() {
	r.mu.Lock()
	r.closed = true
	close(r.queue)
	r.mu.Unlock()
	<-r.done
}

// firstDup reports whether a duplicate (kind, uri, skipped backend) is
// seen for the first time. The caller holds ps.mu (sync).
func (ps *profileServer) firstDup(kind, uri, backend string) bool {
	k := [3]string{kind, uri, backend}
	if ps.dupLogged[k] {
		return false
	}
	if ps.dupLogged == nil {
		ps.dupLogged = map[[3]string]bool{}
	}
	ps.dupLogged[k] = true
	return true
}
