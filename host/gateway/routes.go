package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolhost/toolhost/host"
)

// The REST API, the dashboard and the server logs share the serve
// listener with /mcp, and its bearer tokens: a [serve.clients.NAME] token
// names the caller, its profile (the tools it sees and may call) and
// whether it is an admin (operator actions). The dashboard keeps a token
// in a cookie (TokenCookie) so that a browser gives it once.
//
// Files, by job:
//
//	routes.go      this table, the caller, auth, JSON and error helpers
//	api_rest.go    tools, invoke, circuit breakers, status, metrics, operator actions, openapi.json
//	dashboard.go   GET / (html/template, embed), the token cookie, GET /api/v1/events (SSE), GET /api/v1/audit
//	api_logs.go    GET /api/v1/servers/{name}/logs

// TokenCookie is the cookie the dashboard keeps a client's bearer token
// in (HttpOnly, SameSite=Strict, Path=/, scoped to the listener's host).
const TokenCookie = "toolhost_token"

// Errors of the REST API.
var (
	// ErrNoLogs: the backend has no log file ([host] log_directory unset,
	// or nothing written yet). It is host.ErrNoLogs.
	ErrNoLogs = host.ErrNoLogs
	// ErrForbidden: the operator action needs a client with admin = true.
	ErrForbidden = errors.New("forbidden: this action needs a [serve.clients.NAME] client with admin = true")
)

// Caller is who made a REST or dashboard request: the client of its token
// (ClientHTTP without one), that client's profile ("" for the global
// policy only) and whether it may take operator actions. With no
// [serve.clients] configured (loopback only), every caller is anonymous,
// gets [serve] profile, and is an admin: it can already call every tool.
type Caller struct {
	Client  string
	Profile string
	Admin   bool
}

type callerKey struct{}

// CallerFrom returns the Caller of a request that passed the API's
// authentication (every handler in the route table).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// routes adds the REST API, the dashboard and the logs endpoint to mux.
// Every route runs behind api (authentication, body limit, cross-origin
// protection); those marked admin refuse a non-admin caller with 403.
func (g *Gateway) routes(mux *http.ServeMux) {
	r := func(pattern string, admin bool, h http.HandlerFunc) { mux.Handle(pattern, g.api(admin, h)) }
	// REST (api_rest.go).
	r("GET /api/v1/openapi.json", false, g.openAPI)
	r("GET /api/v1/mcp/tools", false, g.listTools)
	r("GET /api/v1/mcp/tools/{server_id}/{tool_name}", false, g.getTool)
	r("POST /api/v1/mcp/invoke", false, g.invoke)
	r("GET /api/v1/mcp/circuit-breakers", false, g.circuitBreakers)
	r("GET /api/v1/mcp/metrics", false, g.toolMetrics)
	r("GET /api/v1/status", false, g.status)
	r("POST /api/v1/servers/{name}/restart", true, g.restartServer)
	r("POST /api/v1/servers/{name}/enable", true, g.enableServer)
	r("POST /api/v1/servers/{name}/disable", true, g.disableServer)
	r("POST /api/v1/tools/{name}/enable", true, g.enableTool)
	r("POST /api/v1/tools/{name}/disable", true, g.disableTool)
	r("POST /api/v1/reload", true, g.reload)
	// Grants (api_grants.go).
	r("POST /api/v1/grants", true, g.createGrant)
	r("GET /api/v1/grants", true, g.listGrants)
	r("DELETE /api/v1/grants/{id}", true, g.revokeGrant)
	// Tool-definition pinning (api_pins.go).
	r("GET /api/v1/pins", false, g.listPins)
	r("POST /api/v1/tools/{name}/approve", true, g.approveTool)
	// Logs (api_logs.go).
	r("GET /api/v1/servers/{name}/logs", false, g.serverLogs)
	// Tool search (api_search.go).
	r("GET /api/v1/search", false, g.searchTools)
	// Dashboard (dashboard.go): the page authenticates itself (a login
	// form when there is no token), the rest as the API.
	mux.Handle("GET /{$}", g.dashboardAuth(http.HandlerFunc(g.dashboard)))
	mux.Handle("POST /login", http.HandlerFunc(g.login))
	mux.Handle("POST /logout", http.HandlerFunc(g.logout))
	mux.Handle("GET /static/", g.static())
	r("GET /api/v1/events", false, g.events)
	r("GET /api/v1/audit", false, g.auditQuery)  // from the store when there is one (api_audit.go)
	r("GET /api/v1/store", false, g.storeStatus) // the store and its audit writer (api_audit.go)
}

// api authenticates a request (a bearer token, else the TokenCookie),
// puts its Caller in the context, refuses a non-admin on an admin route,
// bounds its body by [serve] max_body and refuses cross-origin unsafe
// requests (a page on another site cannot use the cookie).
func (g *Gateway) api(admin bool, next http.Handler) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.caller(w, r)
		if !ok {
			return
		}
		if admin && !c.Admin {
			WriteError(w, http.StatusForbidden, "forbidden", ErrForbidden.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
	return http.NewCrossOriginProtection().Handler(jsonBodyLimit(limitBody(h, int64(g.serve.MaxBody)), int64(g.serve.MaxBody)))
}

// caller finds the Caller of r, or writes 401 (with WWW-Authenticate,
// RFC 6750 section 3) and returns false.
func (g *Gateway) caller(w http.ResponseWriter, r *http.Request) (Caller, bool) {
	cur := g.cur.Load()
	if len(cur.tokens) == 0 {
		if g.exposed.Load() {
			WriteError(w, http.StatusServiceUnavailable, "unavailable", "no [serve.clients] tokens are configured any more; refusing to serve beyond loopback")
			return Caller{}, false
		}
		return Caller{Client: ClientHTTP, Profile: cur.profile, Admin: true}, true
	}
	tok, fromHeader := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !fromHeader {
		if ck, err := r.Cookie(TokenCookie); err == nil {
			tok = ck.Value
		}
	}
	if tok != "" {
		if ti, err := g.verify(r.Context(), tok, r); err == nil {
			return callerOf(ti), true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
	WriteError(w, http.StatusUnauthorized, "unauthenticated", "a [serve.clients.NAME] bearer token is required: Authorization: Bearer TOKEN")
	return Caller{}, false
}

func callerOf(ti *auth.TokenInfo) Caller {
	c := Caller{Client: ti.UserID}
	c.Profile, _ = ti.Extra["profile"].(string)
	c.Admin, _ = ti.Extra["admin"].(bool)
	return c
}

// APIError is the body of every REST error response:
// {"error": {"kind": KIND, "message": TEXT}}. Kind is machine-readable
// (host.ErrorKind's for a tool call, or one of the API's own:
// "bad_request", "unauthenticated", "forbidden", "not_found",
// "unavailable"); the HTTP status says the same.
type APIError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// WriteJSON writes v as the JSON body of a response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// A browser must not sniff a body with server-supplied strings as
	// HTML (they are escaped too: SetEscapeHTML).
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// WriteError writes an APIError response.
func WriteError(w http.ResponseWriter, code int, kind, msg string) {
	WriteJSON(w, code, map[string]APIError{"error": {Kind: kind, Message: msg}})
}

// CheckQuery refuses (400, naming it) a query parameter not in allowed, a
// repeated one, and a value longer than 256 bytes. It writes the response
// and returns false on refusal.
func CheckQuery(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case !contains(allowed, k):
			WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("unknown query parameter %q (this endpoint takes: %s)", k, strings.Join(allowed, ", ")))
			return false
		case len(q[k]) > 1:
			WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("query parameter %q is given %d times", k, len(q[k])))
			return false
		case len(q[k][0]) > 256:
			WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("query parameter %q is longer than 256 bytes", k))
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
