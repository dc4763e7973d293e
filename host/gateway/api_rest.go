package gateway

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/lazyre"
)

// The REST API's handlers (see routes.go for the table, the caller and
// the error body; openapi/api.json documents every route, body and
// status). Every call runs through the caller's View.CallTool, named by
// host.WithClient: policy, validation, deadlines, supervision and audit
// apply as to a call over MCP.

//go:embed openapi/api.json
var openAPIDoc []byte

// Limits of the REST API's own values (the body is bounded by [serve]
// max_body, params' depth by the host's JSON decoder, 10,000 levels as
// encoding/json's).
const (
	maxCorrelationID = 128
	// The idempotency key's limits are host.CheckIdempotencyKey's.
)

// API error kinds of the REST API beyond host's (see APIError).
const (
	kindNotFound       = "not_found"
	kindInvalidConfig  = "invalid_config"
	kindNotImplemented = "not_implemented"
	kindReloadFailed   = "reload_failed"
)

func (g *Gateway) openAPI(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDoc)
}

// catalog is the caller's view: the Host's own (profile "") or a
// profile's.
type catalog interface {
	Tools(ctx context.Context) ([]host.Tool, error)
	AllTools(ctx context.Context) ([]host.Tool, error)
	CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error)
	Decisions() []host.ToolDecision
}

// viewOf returns the caller's view, or writes the error.
func (g *Gateway) viewOf(w http.ResponseWriter, c Caller) (catalog, bool) {
	if c.Profile == "" {
		return g.h, true
	}
	v, err := g.h.Profile(c.Profile)
	if err != nil {
		writeHostError(w, err)
		return nil, false
	}
	return v, true
}

// writeHostError writes err with its host.ErrorKind and that kind's
// status.
func writeHostError(w http.ResponseWriter, err error) {
	kind := host.ErrorKind(err)
	setRetryAfter(w, err) // a rate limit's refusal (api_rate.go)
	WriteError(w, host.HTTPStatus(kind), kind, err.Error())
}

func badRequest(w http.ResponseWriter, format string, a ...any) {
	WriteError(w, http.StatusBadRequest, host.KindBadRequest, fmt.Sprintf(format, a...))
}

// Formats of GET /api/v1/mcp/tools.
const (
	formatMCP       = "mcp"
	formatOpenAI    = "openai"
	formatAnthropic = "anthropic"
)

// vendorToolName is what OpenAI's function names and Anthropic's tool
// names accept.
var vendorToolName = lazyre.New(`^[a-zA-Z0-9_-]{1,64}$`)

// SkippedTool is a tool left out of a listing in another format, and why.
type SkippedTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// listTools serves GET /api/v1/mcp/tools: the caller's profile's tools
// as {"tools":[...]} in format mcp (default; MCP Tool objects, name the
// catalogue name, with server_id, tool_name and enabled), openai
// ({"type":"function","function":{name,description,parameters,strict?}})
// or anthropic ({name,description,input_schema}); "skipped" lists a tool
// another format cannot carry. server_id keeps one backend's; with
// enabled_only=false (format mcp only) tools disabled at run time are
// listed too (enabled false).
func (g *Gateway) listTools(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "server_id", "enabled_only", "format") {
		return
	}
	q := r.URL.Query()
	format := q.Get("format")
	switch format {
	case "":
		format = formatMCP
	case formatMCP, formatOpenAI, formatAnthropic:
	default:
		badRequest(w, "query parameter \"format\" is %q: it is one of mcp, openai, anthropic", format)
		return
	}
	enabledOnly := true
	if s := q.Get("enabled_only"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			badRequest(w, "query parameter \"enabled_only\" is %q: it is true or false", s)
			return
		}
		enabledOnly = b
	}
	if !enabledOnly && format != formatMCP {
		badRequest(w, "enabled_only=false lists disabled tools, which format %s cannot mark: use format=mcp", format)
		return
	}
	v, ok := g.viewOf(w, CallerFrom(r.Context()))
	if !ok {
		return
	}
	list := v.Tools
	if !enabledOnly {
		list = v.AllTools
	}
	tools, err := list(r.Context())
	if err != nil {
		writeHostError(w, err)
		return
	}
	server := q.Get("server_id")
	out := []any{}
	var skipped []SkippedTool
	for _, t := range tools {
		if server != "" && t.Backend != server {
			continue
		}
		item, reason := renderTool(t, format)
		if reason != "" {
			skipped = append(skipped, SkippedTool{Name: t.Name, Reason: reason})
			continue
		}
		out = append(out, item)
	}
	body := map[string]any{"tools": out}
	if len(skipped) > 0 {
		body["skipped"] = skipped
	}
	WriteJSON(w, http.StatusOK, body)
}

// getTool serves GET /api/v1/mcp/tools/{server_id}/{tool_name}: one tool
// of the caller's view by its backend and its own name on it, in format
// (as listTools; default mcp). Disabled tools are found too (enabled
// false). 404 unknown_tool when the view has no such tool.
func (g *Gateway) getTool(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "format") {
		return
	}
	format := r.URL.Query().Get("format")
	switch format {
	case "":
		format = formatMCP
	case formatMCP, formatOpenAI, formatAnthropic:
	default:
		badRequest(w, "query parameter \"format\" is %q: it is one of mcp, openai, anthropic", format)
		return
	}
	server, name := r.PathValue("server_id"), r.PathValue("tool_name")
	v, ok := g.viewOf(w, CallerFrom(r.Context()))
	if !ok {
		return
	}
	tools, err := v.AllTools(r.Context())
	if err != nil {
		writeHostError(w, err)
		return
	}
	for _, t := range tools {
		if t.Backend == server && t.BackendTool == name {
			item, reason := renderTool(t, format)
			if reason != "" {
				WriteError(w, http.StatusUnprocessableEntity, host.KindBadRequest, fmt.Sprintf("tool %q cannot be given in format %s: %s", t.Name, format, reason))
				return
			}
			WriteJSON(w, http.StatusOK, item)
			return
		}
	}
	WriteError(w, http.StatusNotFound, host.KindUnknownTool, fmt.Sprintf("server %q has no tool %q in this client's view", server, name))
}

// renderTool returns t in format, or why it cannot be.
func renderTool(t host.Tool, format string) (any, string) {
	cl, ok := forClients(t.Tool)
	if !ok {
		return nil, "its inputSchema is not an object schema"
	}
	schema := cl.InputSchema.(map[string]any)
	switch format {
	case formatOpenAI, formatAnthropic:
		if !vendorToolName.MatchString(t.Name) {
			return nil, "its name does not match ^[a-zA-Z0-9_-]{1,64}$"
		}
		if format == formatAnthropic {
			m := map[string]any{"name": t.Name, "input_schema": schema}
			if t.Description != "" {
				m["description"] = t.Description
			}
			return m, ""
		}
		fn := map[string]any{"name": t.Name, "parameters": schema}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		if strictable(schema, 0) {
			fn["strict"] = true
		}
		return map[string]any{"type": "function", "function": fn}, ""
	}
	b, err := json.Marshal(cl)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		return nil, "its definition does not encode as JSON"
	}
	m["name"], m["server_id"], m["tool_name"], m["enabled"] = t.Name, t.Backend, t.BackendTool, !t.Disabled
	return m, ""
}

// strictKeywords are the JSON Schema keywords OpenAI's strict mode
// (Structured Outputs, "Supported schemas") accepts that strictable lets
// through; a schema with any other keyword is not marked strict.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "description": true, "title": true, "anyOf": true, "$defs": true, "$ref": true,
}

// strictable reports whether schema qualifies for OpenAI's strict mode:
// only strictKeywords, and every object schema has additionalProperties
// false and requires all its properties (checked through properties,
// items, anyOf and $defs, at most 32 levels deep).
func strictable(v any, depth int) bool {
	if depth > 32 {
		return false
	}
	s, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k := range s {
		if !strictKeywords[k] {
			return false
		}
	}
	props, _ := s["properties"].(map[string]any)
	if isObjectSchema(s) {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return false
		}
		req, _ := s["required"].([]any)
		have := map[string]bool{}
		for _, x := range req {
			if n, ok := x.(string); ok {
				have[n] = true
			}
		}
		for n := range props {
			if !have[n] {
				return false
			}
		}
	}
	for _, p := range props {
		if !strictable(p, depth+1) {
			return false
		}
	}
	if it, ok := s["items"]; ok && !strictable(it, depth+1) {
		return false
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if !strictable(a, depth+1) {
				return false
			}
		}
	}
	if defs, ok := s["$defs"].(map[string]any); ok {
		for _, d := range defs {
			if !strictable(d, depth+1) {
				return false
			}
		}
	}
	return true
}

func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	_, props := s["properties"]
	return props
}

// InvokeRequest is the body of POST /api/v1/mcp/invoke. The tool is Name
// (its catalogue name) or ServerID and ToolName (the backend and the
// tool's own name on it); ServerID with Name must be the tool's backend.
// Params are the tool's arguments (a JSON object; absent or null for
// none). CorrelationID (at most 128 bytes; generated when absent) comes
// back in the response. IdempotencyKey (at most 256 bytes, printable:
// host.CheckIdempotencyKey; else 400) makes the call idempotent for a tool
// marked so (host.WithIdempotencyKey): made again with the key, it is
// answered with the first completed call's result (Attempts 0, the
// result's _meta "io.toolhost/idempotent-replay": true); reused with
// other arguments or for another tool, 409 idempotency_conflict. Unknown
// fields are refused (400).
type InvokeRequest struct {
	CorrelationID  string          `json:"correlation_id,omitempty"`
	ServerID       string          `json:"server_id,omitempty"`
	ToolName       string          `json:"tool_name,omitempty"`
	Name           string          `json:"name,omitempty"`
	Params         json.RawMessage `json:"params,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// InvokeResponse is the body of every answer of POST /api/v1/mcp/invoke
// once its request was read: Success is true for a result that is not
// isError (status 200). A call that could not be made has Error (its
// host.ErrorKind, and the HTTP status of that kind) and a null Result; a
// result with isError has both, Error's kind from the result
// (host.ResultKind: tool_error, status 500, for the tool's own; the
// host's kind, e.g. invalid_arguments 400, for one the host made).
// Attempts is how many times the call was sent to the backend (1 + its
// retries; 0 when it was refused before: unknown, denied, disabled,
// invalid arguments, circuit open). LatencyMS is the time the call took
// in milliseconds, CompletedAt when it ended (RFC 3339, UTC).
type InvokeResponse struct {
	CorrelationID string              `json:"correlation_id"`
	Success       bool                `json:"success"`
	Result        *mcp.CallToolResult `json:"result"`
	Error         *APIError           `json:"error,omitempty"`
	Attempts      int                 `json:"attempts"`
	LatencyMS     float64             `json:"latency_ms"`
	CompletedAt   time.Time           `json:"completed_at"`
}

// invoke serves POST /api/v1/mcp/invoke. The call takes one of the
// client's max_concurrent slots ([serve] or [serve.clients.NAME]), shared
// with its MCP requests: beyond it, 429 rate_limited at once.
func (g *Gateway) invoke(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		WriteError(w, http.StatusUnsupportedMediaType, host.KindBadRequest, fmt.Sprintf("Content-Type is %q: send application/json", ct))
		return
	}
	var req InvokeRequest
	if !decodeBody(w, r, &req, "an invoke request") {
		return
	}
	name, msg := g.invokeTarget(&req)
	if msg != "" {
		badRequest(w, "%s", msg)
		return
	}
	if req.IdempotencyKey != "" {
		if err := host.CheckIdempotencyKey(req.IdempotencyKey); err != nil {
			badRequest(w, "idempotency_key: %v", err)
			return
		}
	}
	switch {
	case len(req.CorrelationID) > maxCorrelationID:
		badRequest(w, "correlation_id is longer than %d bytes", maxCorrelationID)
		return
	case req.CorrelationID == "":
		req.CorrelationID = newCorrelationID()
	}
	c := CallerFrom(r.Context())
	v, ok := g.viewOf(w, c)
	if !ok {
		return
	}
	release, refusal := g.guard.acquireREST(c)
	if refusal != "" {
		WriteJSON(w, http.StatusTooManyRequests, InvokeResponse{CorrelationID: req.CorrelationID, CompletedAt: time.Now().UTC(),
			Error: &APIError{Kind: host.KindRateLimited, Message: refusal}})
		return
	}
	defer release()
	var args any = json.RawMessage("{}")
	if p := strings.TrimSpace(string(req.Params)); p != "" && p != "null" {
		args = req.Params
	}
	var rec host.AuditRecord
	ctx := host.WithCallRecord(host.WithClient(tracedHTTP(r), c.Client), &rec)
	ctx = host.WithCorrelationID(ctx, req.CorrelationID)   // the audit record (and its store row) carries the answer's id
	ctx = host.WithIdempotencyKey(ctx, req.IdempotencyKey) // issue 25, item 5
	start := time.Now()
	res, err := v.CallTool(ctx, name, args)
	resp := InvokeResponse{CorrelationID: req.CorrelationID, CompletedAt: time.Now().UTC(),
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000, Attempts: attempts(rec, err)}
	code := http.StatusOK
	switch {
	case err != nil:
		kind := host.ErrorKind(err)
		code, resp.Error = host.HTTPStatus(kind), &APIError{Kind: kind, Message: err.Error()}
		setRetryAfter(w, err) // a rate limit's refusal (api_rate.go)
	case res == nil:
		code, resp.Error = http.StatusBadGateway, &APIError{Kind: host.KindBackendError, Message: "the call returned no result"}
	case res.IsError:
		kind := host.ResultKind(res)
		code, resp.Result, resp.Error = host.HTTPStatus(kind), res, &APIError{Kind: kind, Message: resultText(res)}
	default:
		resp.Success, resp.Result = true, res
	}
	if rec.Outcome != "" {
		resp.LatencyMS = rec.LatencyMS
	}
	WriteJSON(w, code, resp)
}

// invokeTarget returns the catalogue name req names, or what is wrong.
func (g *Gateway) invokeTarget(req *InvokeRequest) (string, string) {
	switch {
	case req.Name != "" && req.ToolName != "":
		return "", "give name (the catalogue name) or server_id and tool_name, not both"
	case req.Name != "":
		if req.ServerID != "" {
			prefix := config.ToolPrefix(req.ServerID, g.h.Config().BackendPrefix(req.ServerID))
			if !config.MayOwnToolName(prefix, req.Name) {
				return "", fmt.Sprintf("tool %q is not a tool of server %q (its tools' names begin %q)", req.Name, req.ServerID, prefix)
			}
		}
		return req.Name, ""
	case req.ToolName != "" && req.ServerID == "":
		return "", "tool_name needs server_id (the backend whose tool it is)"
	case req.ToolName != "":
		return config.ToolName(config.ToolPrefix(req.ServerID, g.h.Config().BackendPrefix(req.ServerID)), req.ToolName), ""
	}
	return "", "the body names no tool: give name, or server_id and tool_name"
}

// attempts is how many times a call was sent to its backend (see
// InvokeResponse).
func attempts(rec host.AuditRecord, err error) int {
	switch host.ErrorKind(err) {
	case host.KindUnknownTool, host.KindDenied, host.KindDisabled, host.KindInvalidArguments, host.KindCircuitOpen, host.KindClosed,
		host.KindRateLimited:
		return 0
	}
	if rec.Outcome == host.OutcomeInvalidArguments || rec.Outcome == host.OutcomeCircuitOpen || rec.Idempotency == host.IdemReplay {
		return 0
	}
	return 1 + rec.Retries
}

// resultText is the text of an isError result's text content, bounded.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
		if b.Len() > 4096 {
			return b.String()[:4096] + "..."
		}
	}
	if b.Len() == 0 {
		return "the tool returned an error result"
	}
	return b.String()
}

func newCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // a UUID version 4 (RFC 9562)
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// CircuitBreaker is one circuit breaker (GET /api/v1/mcp/circuit-breakers):
// a backend's (Name and ToolName empty) or a tool's (Name its catalogue
// name, ToolName that name without the backend's prefix). State is
// "closed", "open" or "half-open"; Since when it entered that state, when
// the gateway saw it change (omitted for a closed breaker). From says where
// an open state came from when another process opened it: "store:
// REPLICA#INSTANCE" (another replica, or this host before a restart).
type CircuitBreaker struct {
	ServerID string    `json:"server_id"`
	Name     string    `json:"name,omitempty"`
	ToolName string    `json:"tool_name,omitempty"`
	State    string    `json:"state"`
	Since    time.Time `json:"since,omitzero"`
	From     string    `json:"from,omitempty"`
}

// circuitBreakers serves GET /api/v1/mcp/circuit-breakers: every
// backend's breaker and every tool breaker that is not closed, as
// {"circuit_breakers":[...]}; server_id keeps one backend's, tool_name
// the tool breakers whose catalogue name or tool name it is.
func (g *Gateway) circuitBreakers(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "server_id", "tool_name") {
		return
	}
	q := r.URL.Query()
	server, tool := q.Get("server_id"), q.Get("tool_name")
	stats := g.stats()
	since := func(backend, name, state string) time.Time {
		if stats == nil || state == "closed" {
			return time.Time{}
		}
		if c, ok := stats.circuitOf(backend, name); ok && c.state == state {
			return c.since.UTC()
		}
		return time.Time{}
	}
	out := []CircuitBreaker{}
	cfg := g.h.Config()
	for _, st := range g.h.Status() {
		if server != "" && st.Name != server {
			continue
		}
		if tool == "" {
			state := st.Circuit
			if state == "" {
				state = "closed"
			}
			out = append(out, CircuitBreaker{ServerID: st.Name, State: state, Since: since(st.Name, "", state), From: st.CircuitFrom})
		}
		prefix := config.ToolPrefix(st.Name, cfg.BackendPrefix(st.Name))
		for _, n := range st.OpenTools {
			own := strings.TrimPrefix(n, prefix)
			if tool != "" && tool != n && tool != own {
				continue
			}
			state := "open"
			if stats != nil {
				if c, ok := stats.circuitOf(st.Name, n); ok {
					state = c.state
				}
			}
			if f := st.OpenToolsFrom[n]; f != "" {
				state = "open"
			}
			out = append(out, CircuitBreaker{ServerID: st.Name, Name: n, ToolName: own, State: state, Since: since(st.Name, n, state), From: st.OpenToolsFrom[n]})
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"circuit_breakers": out})
}

func (g *Gateway) stats() *Stats {
	if g.opts.Metrics == nil {
		return nil
	}
	return g.opts.Metrics.Stats()
}

// status serves GET /api/v1/status: host.Host.Status, as `toolhost status
// --json` prints it.
func (g *Gateway) status(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	WriteJSON(w, http.StatusOK, g.h.Status())
}

// toolMetrics serves GET /api/v1/mcp/metrics: per tool of the caller's
// view with a call in time_range (a Go duration, 1m to 24h, default 1h):
// calls, errors, error_rate and p50/p90/p99 latency in milliseconds, as
// {"time_range": D, "tools": [ToolStats...]}; server_id and tool_name
// (catalogue name or the tool's own name) filter.
func (g *Gateway) toolMetrics(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "server_id", "tool_name", "time_range") {
		return
	}
	q := r.URL.Query()
	tr := q.Get("time_range")
	d := time.Hour
	if tr != "" {
		var err error
		d, err = time.ParseDuration(tr)
		if err != nil || d < time.Minute || d > StatsWindow {
			badRequest(w, "query parameter \"time_range\" is %q: give a duration from 1m to 24h, such as 5m, 1h or 24h", tr)
			return
		}
	} else {
		tr = "1h"
	}
	v, ok := g.viewOf(w, CallerFrom(r.Context()))
	if !ok {
		return
	}
	visible := map[string]string{} // catalogue name -> own name, of the view
	for _, td := range v.Decisions() {
		if td.Allowed {
			visible[td.Name] = td.BackendTool
		}
	}
	server, tool := q.Get("server_id"), q.Get("tool_name")
	tools := []ToolStats{}
	if s := g.stats(); s != nil {
		tools = s.Snapshot(d, func(backend, name string) bool {
			own, ok := visible[name]
			return ok && (server == "" || server == backend) && (tool == "" || tool == name || tool == own)
		})
	}
	WriteJSON(w, http.StatusOK, map[string]any{"time_range": tr, "tools": tools})
}

// ServerAction is the answer of an operator action on a backend: the
// action, and the backend's status after it.
type ServerAction struct {
	Server string             `json:"server"`
	Action string             `json:"action"`
	Status host.BackendStatus `json:"status"`
}

// ToolAction is the answer of POST /api/v1/tools/{name}/enable|disable.
type ToolAction struct {
	Tool    string `json:"tool"`
	Enabled bool   `json:"enabled"`
}

func (g *Gateway) restartServer(w http.ResponseWriter, r *http.Request) {
	g.serverAction(w, r, "restart", g.h.Restart)
}
func (g *Gateway) enableServer(w http.ResponseWriter, r *http.Request) {
	g.serverAction(w, r, "enable", g.h.Enable)
}
func (g *Gateway) disableServer(w http.ResponseWriter, r *http.Request) {
	g.serverAction(w, r, "disable", g.h.Disable)
}

// serverAction runs an operator action on backend {name}, audits it with
// the client's name (host.Host.AuditAdmin) and answers a ServerAction
// (200), or the error: 404 not_found for an unknown backend, else the
// host's kind (an enable whose first start failed is 503
// backend_unavailable: the backend is enabled and retried by its restart
// policy).
func (g *Gateway) serverAction(w http.ResponseWriter, r *http.Request, action string, do func(context.Context, string) error) {
	if !CheckQuery(w, r) {
		return
	}
	name := r.PathValue("name")
	ctx := host.WithClient(r.Context(), CallerFrom(r.Context()).Client)
	err := do(ctx, name)
	g.h.AuditAdmin(ctx, action, name, err)
	if errors.Is(err, host.ErrUnknownBackend) {
		WriteError(w, http.StatusNotFound, kindNotFound, err.Error())
		return
	}
	if err != nil {
		writeHostError(w, err)
		return
	}
	out := ServerAction{Server: name, Action: action}
	for _, st := range g.h.Status() {
		if st.Name == name {
			out.Status = st
		}
	}
	WriteJSON(w, http.StatusOK, out)
}

func (g *Gateway) enableTool(w http.ResponseWriter, r *http.Request) {
	g.toolAction(w, r, "enable_tool", true)
}
func (g *Gateway) disableTool(w http.ResponseWriter, r *http.Request) {
	g.toolAction(w, r, "disable_tool", false)
}

// toolAction switches the catalogue tool {name} on or off for every view
// (host.Host.EnableTool, DisableTool), audited; 404 unknown_tool for a
// name not in the catalogue.
func (g *Gateway) toolAction(w http.ResponseWriter, r *http.Request, action string, on bool) {
	if !CheckQuery(w, r) {
		return
	}
	name := r.PathValue("name")
	ctx := host.WithClient(r.Context(), CallerFrom(r.Context()).Client)
	var err error
	if on {
		err = g.h.EnableTool(name)
	} else {
		err = g.h.DisableTool(name)
	}
	g.h.AuditAdmin(ctx, action, name, err)
	if err != nil {
		writeHostError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, ToolAction{Tool: name, Enabled: on})
}

// ConfigProblem is one problem of a configuration a reload refused.
type ConfigProblem struct {
	File    string `json:"file,omitempty"`
	Key     string `json:"key,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// reload serves POST /api/v1/reload: Options.Reload (501 without one);
// its host.ApplyReport (200), or for an invalid configuration (nothing
// changed) 400 {"error":{"kind":"invalid_config",...},"problems":[...]};
// another failure is 500 reload_failed (503 closed on a closed Host).
func (g *Gateway) reload(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	ctx := host.WithClient(r.Context(), CallerFrom(r.Context()).Client)
	if g.opts.Reload == nil {
		WriteError(w, http.StatusNotImplemented, kindNotImplemented, "this gateway has no configuration file to reload")
		return
	}
	rep, err := g.opts.Reload(ctx)
	g.h.AuditAdmin(ctx, "reload", "", err)
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		problems := make([]ConfigProblem, 0, len(list))
		for _, e := range list {
			problems = append(problems, ConfigProblem{File: e.File, Key: e.Key, Line: e.Line, Message: e.Msg})
		}
		WriteJSON(w, http.StatusBadRequest, map[string]any{
			"error":    APIError{Kind: kindInvalidConfig, Message: fmt.Sprintf("the configuration has %d problem(s); nothing was changed", len(list))},
			"problems": problems,
		})
	case errors.Is(err, host.ErrClosed):
		writeHostError(w, err)
	case err != nil:
		WriteError(w, http.StatusInternalServerError, kindReloadFailed, err.Error())
	default:
		WriteJSON(w, http.StatusOK, rep)
	}
}

// jsonBodyLimit answers a request whose Content-Length exceeds max with
// 413 and the API's error body (limitBody, which /mcp shares, answers in
// text); a body without a length is cut at max by limitBody, and the
// handler reading it answers 413 (invoke) or 400.
func jsonBodyLimit(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			WriteError(w, http.StatusRequestEntityTooLarge, host.KindBadRequest,
				fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes ([serve] max_body)", r.ContentLength, max))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decodeBody decodes the request's body, one JSON object with no unknown
// field, into v; it answers 413 (over [serve] max_body) or 400 itself and
// returns false when it cannot. what names the body for the message ("an
// invoke request").
func decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, host.KindBadRequest, fmt.Sprintf("the body exceeds [serve] max_body (%d bytes)", tooBig.Limit))
			return false
		}
		badRequest(w, "the body is not %s: %v", what, err)
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		badRequest(w, "the body has more than one JSON value")
		return false
	}
	return true
}
