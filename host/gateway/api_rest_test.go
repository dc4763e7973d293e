package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// apiConfig has two stdio servers (fx with the fault tools; slow, whose
// one timeout opens a tool's circuit), a Wasm plugin, a profile and three
// clients: root (admin, every tool), alice (profile review, not admin) and
// carol (a profile that requires a backend that never starts).
const apiConfig = `
[servers.fx]
command = "@FIXTURE@"
args    = ["-faults"]
startup_timeout = "5m"

[servers.slow]
command = "@FIXTURE@"
timeout = "500ms"
health_check = "none"
startup_timeout = "5m"
circuit_breaker = { failures = 1, cooldown = "10m" }
tools = ["sleep", "echo"]

[servers.dead]
command = "/nonexistent/toolhost-test-server"
max_restarts = 0

[plugins.time]
path = "@TIME@"
# The first call waits for the module's compilation: cold (a fresh
# machine) and under -race on a busy one it can pass 30s.
timeout = "5m"

[policy]
deny = ["fx__freeze", "fx__hang"]

[profiles.review]
allow = ["fx__echo", "fx__add", "fx__fail", "time__*"]

[profiles.needy]
allow    = ["fx__echo"]
requires = ["dead"]

[serve.clients.root]
token = "root-token-0123456789ab"
admin = true

[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "review"

[serve.clients.carol]
token   = "carol-token-0123456789"
profile = "needy"
`

const (
	apiRoot  = "root-token-0123456789ab"
	apiAlice = "alice-token-0123456789"
	apiCarol = "carol-token-0123456789"
)

func startAPI(t *testing.T) (*fixture, string) {
	t.Helper()
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "plugins"), "./time")
	f := start(t, strings.ReplaceAll(apiConfig, "@TIME@", wasm))
	srv := httptest.NewServer(f.g.Handler())
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// openAPI compiles the served OpenAPI document's response schemas.
type openAPI struct {
	c   *jsonschema.Compiler
	doc map[string]any
}

const openAPIURL = "https://toolhost.invalid/api/v1/openapi.json"

func loadOpenAPI(t *testing.T, base, token string) *openAPI {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %s", resp.Status)
	}
	doc, err := jsonschema.UnmarshalJSON(resp.Body)
	if err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(openAPIURL, doc); err != nil {
		t.Fatal(err)
	}
	m := doc.(map[string]any)
	if m["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", m["openapi"])
	}
	return &openAPI{c: c, doc: m}
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// validate checks a response against the document's schema of its path
// template, method, status and content type; every status an endpoint
// answers must be documented.
func (o *openAPI) validate(t *testing.T, tmpl, method string, status int, ctype string, body []byte) {
	t.Helper()
	paths := o.doc["paths"].(map[string]any)
	p, ok := paths[tmpl].(map[string]any)
	if !ok {
		t.Fatalf("openapi: no path %s", tmpl)
	}
	op, ok := p[strings.ToLower(method)].(map[string]any)
	if !ok {
		t.Fatalf("openapi: no %s %s", method, tmpl)
	}
	code := fmt.Sprint(status)
	r, ok := op["responses"].(map[string]any)[code].(map[string]any)
	if !ok {
		t.Fatalf("openapi: %s %s does not document status %d (body %s)", method, tmpl, status, body)
	}
	ct, _, _ := strings.Cut(ctype, ";")
	content, _ := r["content"].(map[string]any)
	if _, ok := content[ct]; !ok {
		t.Fatalf("openapi: %s %s %d does not document content type %q", method, tmpl, status, ct)
	}
	if ct != "application/json" {
		return
	}
	loc := openAPIURL + "#/paths/" + url.PathEscape(pointerEscape(tmpl)) + "/" + strings.ToLower(method) + "/responses/" + code + "/content/application~1json/schema"
	sch, err := o.c.Compile(loc)
	if err != nil {
		t.Fatalf("openapi: compile %s: %v", loc, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s %d: body is not JSON: %v: %s", method, tmpl, status, err, body)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s %s %d: response does not match its OpenAPI schema: %v\nbody: %s", method, tmpl, status, err, body)
	}
}

// apiCall is one request of the table-driven run.
type apiCall struct {
	name   string
	token  string
	method string
	path   string // the URL path and query
	tmpl   string // the OpenAPI path template
	body   string
	status int
}

type apiClient struct {
	t    *testing.T
	base string
	spec *openAPI
	seen map[string]bool // "METHOD TEMPLATE STATUS" exercised
}

func (c *apiClient) do(tc apiCall) map[string]any {
	c.t.Helper()
	out, _ := c.doRaw(tc)
	return out
}

func (c *apiClient) doRaw(tc apiCall) (map[string]any, []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var body io.Reader
	if tc.body != "" {
		body = strings.NewReader(tc.body)
	}
	req, err := http.NewRequestWithContext(ctx, tc.method, c.base+tc.path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if tc.token != "" {
		req.Header.Set("Authorization", "Bearer "+tc.token)
	}
	if tc.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(tc.body) > 1<<20 {
		// The server answers 413 before reading the body: wait for its
		// answer before sending it (RFC 9110, section 10.1.1).
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", tc.name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != tc.status {
		c.t.Fatalf("%s: %s %s = %d, want %d: %s", tc.name, tc.method, tc.path, resp.StatusCode, tc.status, raw)
	}
	c.spec.validate(c.t, tc.tmpl, tc.method, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	c.seen[fmt.Sprintf("%s %s", tc.method, tc.tmpl)] = true
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out, raw
}

func errKind(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

func toolNamesOf(m map[string]any, key string) []string {
	var names []string
	list, _ := m["tools"].([]any)
	for _, x := range list {
		it := x.(map[string]any)
		if key == "function" {
			it = it["function"].(map[string]any)
		}
		names = append(names, it["name"].(string))
	}
	return names
}

// TestRESTAPI runs every endpoint of the REST API, success and error
// cases, over a real gateway with real backends (two mcpfixture
// processes, a failing server, a Wasm plugin), and validates every
// response against the served OpenAPI document.
func TestRESTAPI(t *testing.T) {
	f, base := startAPI(t)
	c := &apiClient{t: t, base: base, spec: loadOpenAPI(t, base, apiRoot), seen: map[string]bool{}}
	const (
		tools   = "/api/v1/mcp/tools"
		tool    = "/api/v1/mcp/tools/{server_id}/{tool_name}"
		invoke  = "/api/v1/mcp/invoke"
		cb      = "/api/v1/mcp/circuit-breakers"
		metrics = "/api/v1/mcp/metrics"
		status  = "/api/v1/status"
		reload  = "/api/v1/reload"
		oa      = "/api/v1/openapi.json"
	)

	// Authentication and query checks.
	c.do(apiCall{"openapi", apiRoot, "GET", oa, oa, "", 200})
	if m := c.do(apiCall{"no token", "", "GET", tools, tools, "", 401}); errKind(m) != "unauthenticated" {
		t.Errorf("no token: kind %q", errKind(m))
	}
	c.do(apiCall{"bad token", "wrong-token-0123456789", "GET", status, status, "", 401})
	m := c.do(apiCall{"unknown query", apiRoot, "GET", tools + "?colour=red", tools, "", 400})
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"colour"`) {
		t.Errorf("unknown query parameter: message %q does not name it", msg)
	}
	c.do(apiCall{"repeated query", apiRoot, "GET", tools + "?format=mcp&format=mcp", tools, "", 400})
	c.do(apiCall{"bad format", apiRoot, "GET", tools + "?format=xml", tools, "", 400})
	c.do(apiCall{"bad enabled_only", apiRoot, "GET", tools + "?enabled_only=maybe", tools, "", 400})
	c.do(apiCall{"enabled_only=false openai", apiRoot, "GET", tools + "?enabled_only=false&format=openai", tools, "", 400})

	// Tools: each client sees its profile's.
	all := toolNamesOf(c.do(apiCall{"root tools", apiRoot, "GET", tools, tools, "", 200}), "")
	for _, want := range []string{"fx__echo", "fx__crash", "slow__sleep", "time__current_time"} {
		if !slices.Contains(all, want) {
			t.Errorf("root's tools %v lack %s", all, want)
		}
	}
	if slices.Contains(all, "fx__hang") {
		t.Errorf("root's tools list fx__hang, which the policy denies")
	}
	alice := toolNamesOf(c.do(apiCall{"alice tools", apiAlice, "GET", tools, tools, "", 200}), "")
	if slices.Contains(alice, "fx__crash") || !slices.Contains(alice, "fx__echo") || !slices.Contains(alice, "time__current_time") {
		t.Errorf("alice's tools %v: want her profile's only", alice)
	}
	if got := toolNamesOf(c.do(apiCall{"server_id", apiRoot, "GET", tools + "?server_id=time", tools, "", 200}), ""); len(got) == 0 || !strings.HasPrefix(got[0], "time__") || slices.ContainsFunc(got, func(s string) bool { return !strings.HasPrefix(s, "time__") }) {
		t.Errorf("server_id=time: %v", got)
	}
	oai := c.do(apiCall{"openai", apiAlice, "GET", tools + "?format=openai", tools, "", 200})
	for _, x := range oai["tools"].([]any) {
		fn := x.(map[string]any)["function"].(map[string]any)
		strict, has := fn["strict"]
		switch fn["name"] {
		case "fx__add": // additionalProperties false, a and b required
			if strict != true {
				t.Errorf("openai fx__add: strict %v, want true: %v", strict, fn)
			}
		case "time__current_time": // timezone is optional
			if has {
				t.Errorf("openai time__current_time: strict %v, want none (an optional property)", strict)
			}
		}
	}
	ant := c.do(apiCall{"anthropic", apiAlice, "GET", tools + "?format=anthropic", tools, "", 200})
	if names := toolNamesOf(ant, ""); !slices.Equal(names, alice) {
		t.Errorf("anthropic names %v, want %v", names, alice)
	}
	got := c.do(apiCall{"one tool", apiAlice, "GET", "/api/v1/mcp/tools/fx/echo", tool, "", 200})
	if got["name"] != "fx__echo" || got["server_id"] != "fx" || got["tool_name"] != "echo" || got["enabled"] != true {
		t.Errorf("GET tools/fx/echo: %v", got)
	}
	c.do(apiCall{"one tool openai", apiAlice, "GET", "/api/v1/mcp/tools/fx/add?format=openai", tool, "", 200})
	c.do(apiCall{"tool outside profile", apiAlice, "GET", "/api/v1/mcp/tools/fx/crash", tool, "", 404})
	c.do(apiCall{"unknown tool", apiRoot, "GET", "/api/v1/mcp/tools/fx/nope", tool, "", 404})

	// Invoke: success, by name and by server_id + tool_name.
	m = c.do(apiCall{"invoke", apiAlice, "POST", invoke, invoke, `{"correlation_id":"c-1","server_id":"fx","tool_name":"echo","params":{"text":"hi"}}`, 200})
	if m["correlation_id"] != "c-1" || m["success"] != true || m["attempts"] != 1.0 || m["error"] != nil {
		t.Errorf("invoke: %v", m)
	}
	if res := m["result"].(map[string]any); !strings.Contains(fmt.Sprint(res["content"]), "hi") {
		t.Errorf("invoke result %v", res)
	}
	m = c.do(apiCall{"invoke by name", apiRoot, "POST", invoke, invoke, `{"name":"time__current_time","params":{},"idempotency_key":"k1"}`, 200})
	if id, _ := m["correlation_id"].(string); len(id) != 36 {
		t.Errorf("generated correlation_id %q, want a UUID", id)
	}
	if recs := f.records(); !slices.ContainsFunc(recs, func(r host.AuditRecord) bool {
		return r.Tool == "fx__echo" && r.Client == "alice" && r.Profile == "review" && r.Outcome == host.OutcomeOK
	}) {
		t.Errorf("no audit record of alice's invoke of fx__echo: %+v", recs)
	}

	// Invoke: every error kind, with its status.
	kinds := []struct {
		name, token, body string
		status            int
		kind              string
	}{
		{"not json", apiRoot, `{"name":`, 400, "bad_request"},
		{"unknown field", apiRoot, `{"name":"fx__echo","colour":1}`, 400, "bad_request"},
		{"no tool", apiRoot, `{"params":{}}`, 400, "bad_request"},
		{"two values", apiRoot, `{"name":"fx__echo"} {}`, 400, "bad_request"},
		{"name and tool_name", apiRoot, `{"name":"fx__echo","server_id":"fx","tool_name":"echo"}`, 400, "bad_request"},
		{"name of another server", apiRoot, `{"name":"fx__echo","server_id":"time"}`, 400, "bad_request"},
		{"long correlation_id", apiRoot, `{"name":"fx__echo","correlation_id":"` + strings.Repeat("x", 129) + `"}`, 400, "bad_request"},
		{"params too deep", apiRoot, `{"name":"fx__echo","params":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, 400, "bad_request"},
		{"params not an object", apiRoot, `{"name":"fx__echo","params":[1]}`, 400, "invalid_arguments"},
		{"params invalid", apiRoot, `{"name":"fx__add","params":{"a":"one","b":2}}`, 400, "invalid_arguments"},
		{"unknown tool", apiRoot, `{"name":"fx__nope","params":{}}`, 404, "unknown_tool"},
		{"denied by policy", apiRoot, `{"name":"fx__hang","params":{}}`, 403, "denied"},
		{"denied by profile", apiAlice, `{"name":"fx__crash","params":{}}`, 403, "denied"},
		{"tool error", apiAlice, `{"name":"fx__fail","params":{"message":"<b>no</b>"}}`, 500, "tool_error"},
		{"required backend down", apiCarol, `{"name":"fx__echo","params":{"text":"x"}}`, 503, "backend_unavailable"},
		{"timeout", apiRoot, `{"server_id":"slow","tool_name":"sleep","params":{"ms":60000}}`, 504, "timeout"},
		{"circuit open", apiRoot, `{"server_id":"slow","tool_name":"sleep","params":{"ms":1}}`, 503, "circuit_open"},
		{"backend error", apiRoot, `{"name":"fx__crash","params":{}}`, 502, "backend_error"},
	}
	for _, k := range kinds {
		m := c.do(apiCall{"invoke " + k.name, k.token, "POST", invoke, invoke, k.body, k.status})
		if errKind(m) != k.kind {
			t.Errorf("invoke %s: kind %q, want %q: %v", k.name, errKind(m), k.kind, m)
		}
		if k.status != 400 || k.kind == "invalid_arguments" {
			if m["success"] != false || m["correlation_id"] == "" {
				t.Errorf("invoke %s: not an InvokeResponse: %v", k.name, m)
			}
		}
		switch k.kind {
		case "tool_error", "invalid_arguments":
			res, _ := m["result"].(map[string]any)
			if k.name != "params not an object" && (res == nil || res["isError"] != true) {
				t.Errorf("invoke %s: the isError result is not included: %v", k.name, m)
			}
			meta, _ := res["_meta"].(map[string]any)
			if k.kind == "tool_error" && meta[host.MetaErrorKind] != nil {
				t.Errorf("invoke %s: a tool's own isError result carries %s: %v", k.name, host.MetaErrorKind, meta)
			}
			if k.name == "params invalid" && meta[host.MetaErrorKind] != "invalid_arguments" {
				t.Errorf("invoke %s: the host's isError result has _meta %v", k.name, meta)
			}
		case "unknown_tool", "denied", "circuit_open":
			if m["attempts"] != 0.0 {
				t.Errorf("invoke %s: attempts %v, want 0 (never sent)", k.name, m["attempts"])
			}
		}
	}
	// A body over max_body.
	c.do(apiCall{"huge body", apiRoot, "POST", invoke, invoke, `{"name":"fx__echo","params":{"text":"` + strings.Repeat("a", 5<<20) + `"}}`, 413})

	// Circuit breakers: slow__sleep's is open.
	m = c.do(apiCall{"circuit breakers", apiAlice, "GET", cb, cb, "", 200})
	var open bool
	for _, x := range m["circuit_breakers"].([]any) {
		b := x.(map[string]any)
		if b["name"] == "slow__sleep" && b["state"] == "open" && b["tool_name"] == "sleep" && b["since"] != nil {
			open = true
		}
	}
	if !open {
		t.Errorf("circuit breakers: slow__sleep not open: %v", m)
	}
	m = c.do(apiCall{"circuit breakers filtered", apiRoot, "GET", cb + "?server_id=slow&tool_name=sleep", cb, "", 200})
	if n := len(m["circuit_breakers"].([]any)); n != 1 {
		t.Errorf("circuit breakers of slow/sleep: %d, want 1: %v", n, m)
	}
	c.do(apiCall{"circuit breakers bad query", apiRoot, "GET", cb + "?tool=x", cb, "", 400})

	// Status: what toolhost status --json prints.
	_, raw := c.doRaw(apiCall{"status", apiAlice, "GET", status, status, "", 200})
	var st []host.BackendStatus
	if err := json.Unmarshal(raw, &st); err != nil || len(st) != 4 {
		t.Errorf("status: %v, %d backends: %s", err, len(st), raw)
	}
	c.do(apiCall{"status bad query", apiRoot, "GET", status + "?x=1", status, "", 400})

	// Metrics: fed by the audit records.
	m = c.do(apiCall{"metrics", apiRoot, "GET", metrics + "?time_range=5m", metrics, "", 200})
	var echo map[string]any
	for _, x := range m["tools"].([]any) {
		if x.(map[string]any)["name"] == "fx__echo" {
			echo = x.(map[string]any)
		}
	}
	if echo == nil || echo["calls"].(float64) < 1 || echo["p50_ms"].(float64) <= 0 {
		t.Errorf("metrics: fx__echo %v in %v", echo, m)
	}
	m = c.do(apiCall{"metrics of alice", apiAlice, "GET", metrics, metrics, "", 200})
	for _, x := range m["tools"].([]any) {
		if n := x.(map[string]any)["name"]; n == "fx__crash" || n == "slow__sleep" {
			t.Errorf("alice's metrics show %v, outside her profile", n)
		}
	}
	m = c.do(apiCall{"metrics filtered", apiRoot, "GET", metrics + "?server_id=fx&tool_name=fail", metrics, "", 200})
	if ts := m["tools"].([]any); len(ts) != 1 || ts[0].(map[string]any)["error_rate"] != 1.0 {
		t.Errorf("metrics of fx__fail: %v", m)
	}
	for _, bad := range []string{"0s", "25h", "soon", "-1h"} {
		c.do(apiCall{"metrics time_range " + bad, apiRoot, "GET", metrics + "?time_range=" + bad, metrics, "", 400})
	}

	// Operator actions: 403 for a client that is not an admin.
	for _, p := range []struct{ path, tmpl string }{
		{"/api/v1/servers/fx/restart", "/api/v1/servers/{name}/restart"},
		{"/api/v1/servers/fx/disable", "/api/v1/servers/{name}/disable"},
		{"/api/v1/servers/fx/enable", "/api/v1/servers/{name}/enable"},
		{"/api/v1/tools/fx__echo/disable", "/api/v1/tools/{name}/disable"},
		{"/api/v1/tools/fx__echo/enable", "/api/v1/tools/{name}/enable"},
		{reload, reload},
	} {
		if m := c.do(apiCall{"non-admin " + p.path, apiAlice, "POST", p.path, p.tmpl, "", 403}); errKind(m) != "forbidden" {
			t.Errorf("non-admin %s: %v", p.path, m)
		}
		c.do(apiCall{"no token " + p.path, "", "POST", p.path, p.tmpl, "", 401})
	}
	c.do(apiCall{"restart unknown", apiRoot, "POST", "/api/v1/servers/nope/restart", "/api/v1/servers/{name}/restart", "", 404})
	c.do(apiCall{"disable unknown tool", apiRoot, "POST", "/api/v1/tools/nope/disable", "/api/v1/tools/{name}/disable", "", 404})

	// Disable a tool: refused with 409, hidden, listed with enabled_only=false.
	m = c.do(apiCall{"disable tool", apiRoot, "POST", "/api/v1/tools/fx__echo/disable", "/api/v1/tools/{name}/disable", "", 200})
	if m["tool"] != "fx__echo" || m["enabled"] != false {
		t.Errorf("disable tool: %v", m)
	}
	if m := c.do(apiCall{"invoke disabled", apiAlice, "POST", invoke, invoke, `{"name":"fx__echo","params":{"text":"x"}}`, 409}); errKind(m) != "disabled" {
		t.Errorf("invoke of a disabled tool: %v", m)
	}
	if names := toolNamesOf(c.do(apiCall{"tools without disabled", apiAlice, "GET", tools, tools, "", 200}), ""); slices.Contains(names, "fx__echo") {
		t.Errorf("a disabled tool is listed: %v", names)
	}
	m = c.do(apiCall{"tools with disabled", apiAlice, "GET", tools + "?enabled_only=false", tools, "", 200})
	var off bool
	for _, x := range m["tools"].([]any) {
		if it := x.(map[string]any); it["name"] == "fx__echo" && it["enabled"] == false {
			off = true
		}
	}
	if !off {
		t.Errorf("enabled_only=false does not list fx__echo disabled: %v", m)
	}
	c.do(apiCall{"enable tool", apiRoot, "POST", "/api/v1/tools/fx__echo/enable", "/api/v1/tools/{name}/enable", "", 200})
	c.do(apiCall{"invoke enabled", apiAlice, "POST", invoke, invoke, `{"name":"fx__echo","params":{"text":"x"}}`, 200})

	// Servers: disable (calls 409), enable, restart.
	m = c.do(apiCall{"disable server", apiRoot, "POST", "/api/v1/servers/slow/disable", "/api/v1/servers/{name}/disable", "", 200})
	if s := m["status"].(map[string]any); s["state"] != "disabled" {
		t.Errorf("disable server: %v", m)
	}
	c.do(apiCall{"enable server", apiRoot, "POST", "/api/v1/servers/slow/enable", "/api/v1/servers/{name}/enable", "", 200})
	m = c.do(apiCall{"restart server", apiRoot, "POST", "/api/v1/servers/fx/restart", "/api/v1/servers/{name}/restart", "", 200})
	if s := m["status"].(map[string]any); s["state"] != "ready" || m["action"] != "restart" {
		t.Errorf("restart: %v", m)
	}
	c.do(apiCall{"restart failing", apiRoot, "POST", "/api/v1/servers/dead/restart", "/api/v1/servers/{name}/restart", "", 503})

	// Reload: no Options.Reload here.
	c.do(apiCall{"reload without Reload", apiRoot, "POST", reload, reload, "", 501})

	// Every operator action is audited with the client's name.
	for _, op := range []string{"admin/disable_tool", "admin/enable_tool", "admin/disable", "admin/enable", "admin/restart"} {
		if !slices.ContainsFunc(f.records(), func(r host.AuditRecord) bool { return r.Op == op && r.Client == "root" }) {
			t.Errorf("no audit record %s by root", op)
		}
	}

	// The dashboard's audit records and the logs (no log directory here),
	// validated against the document like the rest.
	const audit, logs = "/api/v1/audit", "/api/v1/servers/{name}/logs"
	c.do(apiCall{"audit", apiRoot, "GET", audit + "?limit=5", audit, "", 200})
	c.do(apiCall{"audit of own client", apiAlice, "GET", audit + "?client=alice&outcome=ok", audit, "", 200})
	if m := c.do(apiCall{"audit of another client", apiAlice, "GET", audit + "?client=root", audit, "", 403}); errKind(m) != "forbidden" {
		t.Errorf("a non-admin reading another client's records: %v", m)
	}
	c.do(apiCall{"audit bad limit", apiRoot, "GET", audit + "?limit=0", audit, "", 400})
	if m := c.do(apiCall{"logs without log_directory", apiRoot, "GET", "/api/v1/servers/fx/logs", logs, "", 404}); errKind(m) != "no_logs" {
		t.Errorf("logs without [host] log_directory: %v", m)
	}
	c.do(apiCall{"logs of an unknown backend", apiRoot, "GET", "/api/v1/servers/nope/logs?tail=5", logs, "", 404})
	c.do(apiCall{"logs bad tail", apiRoot, "GET", "/api/v1/servers/fx/logs?tail=100001", logs, "", 400})

	// Every route of the API was run (the logs and dashboard routes are
	// their own files').
	for _, r := range []string{"GET " + oa, "GET " + tools, "GET " + tool, "POST " + invoke, "GET " + cb, "GET " + metrics, "GET " + status, "POST " + reload,
		"POST /api/v1/servers/{name}/restart", "POST /api/v1/servers/{name}/enable", "POST /api/v1/servers/{name}/disable",
		"POST /api/v1/tools/{name}/enable", "POST /api/v1/tools/{name}/disable"} {
		if !c.seen[r] {
			t.Errorf("route %s was not run", r)
		}
	}
}

// TestRESTReload: POST /api/v1/reload runs Options.Reload: a
// config.ErrorList is 400 invalid_config with every problem and its
// position, nothing changed; success is the ApplyReport; both audited.
func TestRESTReload(t *testing.T) {
	fx := testutil.Fixture(t)
	src := func(extra string) string {
		return "[servers.fx]\ncommand = \"" + fx + "\"\n" + extra + "\n[serve.clients.root]\ntoken = \"" + apiRoot + "\"\nadmin = true\n"
	}
	cfg, err := config.Parse([]byte(src("")), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []host.AuditRecord
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: hclog.NewNullLogger(), Audit: func(r host.AuditRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	next := src("[servers.fy]\ncommand = \"" + fx + "\"\nbogus_key = 1\nargs = 7\n")
	g, err := gateway.New(h, &gateway.Options{Reload: func(ctx context.Context) (host.ApplyReport, error) {
		mu.Lock()
		text := next
		mu.Unlock()
		c, err := config.Parse([]byte(text), &config.Options{Name: "test.toml"})
		if err != nil {
			return host.ApplyReport{}, err
		}
		return h.Apply(ctx, c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	c := &apiClient{t: t, base: srv.URL, spec: loadOpenAPI(t, srv.URL, apiRoot), seen: map[string]bool{}}
	const reload = "/api/v1/reload"
	m := c.do(apiCall{"invalid", apiRoot, "POST", reload, reload, "", 400})
	probs, _ := m["problems"].([]any)
	if errKind(m) != "invalid_config" || len(probs) < 2 {
		t.Fatalf("invalid reload: %v", m)
	}
	for _, p := range probs {
		if pm := p.(map[string]any); pm["line"] == nil || pm["message"] == "" {
			t.Errorf("problem without a position: %v", pm)
		}
	}
	if len(h.Status()) != 1 {
		t.Errorf("an invalid reload changed the backends: %v", h.Status())
	}
	mu.Lock()
	next = src("[servers.fy]\ncommand = \"" + fx + "\"\n")
	mu.Unlock()
	m = c.do(apiCall{"valid", apiRoot, "POST", reload, reload, "", 200})
	if added, _ := m["added"].([]any); len(added) != 1 || added[0] != "fy" {
		t.Errorf("reload report: %v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	var n int
	for _, r := range recs {
		if r.Op == "admin/reload" && r.Client == "root" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d admin/reload audit records, want 2 (the refused one too)", n)
	}
}

// TestErrorKindsReal: host.ErrorKind of real errors of a real Host, one
// per kind a call can end with (tool_error, a result, is in TestRESTAPI;
// rate_limited has no producer yet), and HTTPStatus of every kind.
func TestErrorKindsReal(t *testing.T) {
	f, _ := startAPI(t)
	ctx := context.Background()
	check := func(name string, err error, want string) {
		t.Helper()
		if got := host.ErrorKind(err); got != want {
			t.Errorf("%s: ErrorKind(%v) = %q, want %q", name, err, got, want)
		}
	}
	_, err := f.h.CallTool(ctx, "fx__nope", nil)
	check("unknown", err, host.KindUnknownTool)
	_, err = f.h.CallTool(ctx, "fx__hang", nil)
	check("denied", err, host.KindDenied)
	_, err = f.h.CallTool(ctx, "fx__echo", json.RawMessage(`[1]`))
	check("invalid", err, host.KindInvalidArguments)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.h.CallTool(cctx, "fx__sleep", map[string]any{"ms": 60000})
	check("canceled", err, host.KindCanceled)
	if err := f.h.DisableTool("fx__echo"); err != nil {
		t.Fatal(err)
	}
	_, err = f.h.CallTool(ctx, "fx__echo", nil)
	check("tool disabled", err, host.KindDisabled)
	if !errors.Is(err, host.ErrToolDisabled) {
		t.Errorf("disabled tool: %v, want ErrToolDisabled", err)
	}
	if err := f.h.Disable(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	_, err = f.h.CallTool(ctx, "slow__echo", nil)
	check("backend disabled", err, host.KindDisabled)
	if err := f.h.DisableTool("nope"); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("DisableTool(nope) = %v, want ErrUnknownTool", err)
	}
	for kind, code := range map[string]int{host.KindBadRequest: 400, host.KindInvalidArguments: 400, host.KindDenied: 403, host.KindUnknownTool: 404,
		host.KindDisabled: 409, host.KindRateLimited: 429, host.KindCanceled: 499, host.KindToolError: 500, host.KindBackendError: 502,
		host.KindBackendUnavailable: 503, host.KindCircuitOpen: 503, host.KindClosed: 503, host.KindTimeout: 504} {
		if got := host.HTTPStatus(kind); got != code {
			t.Errorf("HTTPStatus(%s) = %d, want %d", kind, got, code)
		}
	}
	f.g.Close()
	f.h.Close()
	_, err = f.h.CallTool(ctx, "fx__echo", nil)
	check("closed", err, host.KindClosed)
	check("nil", nil, "")
}

// TestOpenAPICoversRoutes: every route of routes.go is a path and method
// of the OpenAPI document (the dashboard's and the logs' too).
func TestOpenAPICoversRoutes(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	raw, err := os.ReadFile("openapi/api.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?:r|mux\.Handle)\("(GET|POST|PUT|DELETE|PATCH) (/[^"]*)"`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		n++
		path := strings.TrimSuffix(m[2], "{$}")
		if strings.HasSuffix(path, "/") && path != "/" {
			path += "{path}"
		}
		if doc.Paths[path][strings.ToLower(m[1])] == nil {
			t.Errorf("route %s %s is not in openapi/api.json (as %s)", m[1], m[2], path)
		}
	}
	if n < 18 {
		t.Errorf("found %d routes in routes.go; the pattern no longer fits it", n)
	}
}

// TestInvokeMaxConcurrent: a client's invoke calls count against its
// max_concurrent, and one beyond it is refused at once with 429
// rate_limited; another client is not held up.
func TestInvokeMaxConcurrent(t *testing.T) {
	f := start(t, testConfig+"max_concurrent = 1\n") // bob's table is the last
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	c := &apiClient{t: t, base: srv.URL, spec: loadOpenAPI(t, srv.URL, "bob-token-0123456789ab"), seen: map[string]bool{}}
	const invoke = "/api/v1/mcp/invoke"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // holds bob's one slot until cancelled
		defer close(done)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+invoke, strings.NewReader(`{"name":"fx__sleep","params":{"ms":600000}}`))
			req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			// Again: refused while a probe below held the slot, or
			// ended by the call's deadline.
			resp.Body.Close()
		}
	}()
	defer func() { cancel(); <-done }()
	testutil.Eventually(t, waitTimeout, func() bool {
		req, _ := http.NewRequest("POST", srv.URL+invoke, strings.NewReader(`{"name":"fx__echo","params":{"text":"x"}}`))
		req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusTooManyRequests
	}, "bob's second call was never refused")
	if m := c.do(apiCall{"over max_concurrent", "bob-token-0123456789ab", "POST", invoke, invoke, `{"name":"fx__echo","params":{"text":"x"}}`, 429}); errKind(m) != "rate_limited" {
		t.Errorf("over max_concurrent: %v", m)
	}
	c.do(apiCall{"another client", "alice-token-0123456789", "POST", invoke, invoke, `{"name":"fx__echo","params":{"text":"x"}}`, 200})
}

// TestOpenAPISchemasMatchTypes: the document's schemas of the host's own
// types have exactly their JSON members, so a field added in Go (and
// answered by /api/v1/status or /api/v1/audit) cannot go undocumented, or
// be refused by a client that validates against a schema with
// additionalProperties false.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	raw, err := os.ReadFile("openapi/api.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"AuditRecord": host.AuditRecord{}, "BackendStatus": host.BackendStatus{}} {
		var want []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				want = append(want, tag)
			}
		}
		var got []string
		for p := range doc.Components.Schemas[name].Properties {
			got = append(got, p)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("components.schemas.%s has %v; host.%s's JSON members are %v", name, got, name, want)
		}
	}
}
