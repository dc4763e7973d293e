// Command client is the MCP conformance suite's client under test for
// toolhost: every scenario goes through toolhost's Go API (host.New on a
// configuration made from the URL the suite gives, host.Options handlers,
// Host.Tools and Host.CallTool), so the suite checks toolhost's MCP client
// as an embedder uses it, not the go-sdk's directly.
//
// The suite (`npx @modelcontextprotocol/conformance client --command
// "bin/conformance-client" --suite all`) runs it once per client scenario
// with the server URL as its only argument, the scenario's name in
// MCP_CONFORMANCE_SCENARIO and the scenario's context (JSON) in
// MCP_CONFORMANCE_CONTEXT, as it runs the go-sdk's example client
// (go-sdk/conformance/everything-client), whose scenario handlers these
// mirror. The exit status is 0 when the scenario's steps succeeded; the
// suite judges the rest from what it saw on the wire.
//
// testdata/conformance/run.sh builds and runs it (make conformance);
// testdata/conformance/baseline-client.yml lists the scenarios it still
// fails, each with its reason.
package main

//lint:file-ignore SA1019 elicitation is deprecated as of protocol 2026-07-28 (SEP-2577) but the suite's 2025-11-25 scenarios use it

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/transport"
)

// backend is the [servers.NAME] the scenario's server is configured as; it
// has no prefix, so catalogue names are the server's own tool names.
const backend = "conformance"

// scenarioTimeout bounds one scenario; the suite's own timeout per scenario
// is 30s.
const scenarioTimeout = 25 * time.Second

// scenario runs one conformance scenario against the server at url; cctx is
// MCP_CONFORMANCE_CONTEXT decoded (nil when unset).
type scenario func(ctx context.Context, url string, cctx map[string]any) error

var scenarios = map[string]scenario{
	"initialize":                          runInitialize,
	"tools_call":                          runToolsCall,
	"elicitation-sep1034-client-defaults": runElicitationDefaults,
	"sse-retry":                           runSSERetry,
}

// authScenarios are the suite's auth/* scenarios (suite 0.1.16): connect
// with OAuth, list the tools and call test-tool. Each gets runAuth.
var authScenarios = []string{
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/basic-cimd",
	"auth/client-credentials-basic",
	"auth/client-credentials-jwt",
	"auth/cross-app-access-complete-flow",
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/offline-access-not-supported",
	"auth/offline-access-scope",
	"auth/pre-registration",
	"auth/resource-mismatch",
	"auth/scope-from-scopes-supported",
	"auth/scope-from-www-authenticate",
	"auth/scope-omitted-when-undefined",
	"auth/scope-retry-limit",
	"auth/scope-step-up",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-none",
	"auth/token-endpoint-auth-post",
}

func init() {
	for _, name := range authScenarios {
		scenarios[name] = runAuth
	}
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("toolhost conformance client: ")
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if len(os.Args) != 2 || name == "" {
		usage("usage: MCP_CONFORMANCE_SCENARIO=NAME %s SERVER-URL", os.Args[0])
	}
	run, ok := scenarios[name]
	if !ok {
		usage("unknown scenario %q", name)
	}
	var cctx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cctx); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	if err := run(ctx, os.Args[1], cctx); err != nil {
		log.Fatalf("scenario %s: %v", name, err)
	}
}

func usage(format string, args ...any) {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	log.Fatalf(format+"\nscenarios:\n  %s", append(args, strings.Join(names, "\n  "))...)
}

// open builds a Host with one backend, the server at url over Streamable
// HTTP without a prefix, and opts (nil: none), after authOptions has had its
// say. It fails when the backend did not become ready (its last error).
func open(ctx context.Context, url string, cctx map[string]any, opts *host.Options) (*host.Host, error) {
	noPrefix := ""
	srv := &config.Server{URL: url, Prefix: &noPrefix}
	// One attempt: a scenario's server does not come back.
	srv.Supervision.HealthCheck = config.HealthNone
	if opts == nil {
		opts = &host.Options{}
	}
	authOptions(cctx, srv, opts)
	cfg := &config.Config{Servers: map[string]*config.Server{backend: srv}}
	h, err := host.New(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, st := range h.Status() {
		if st.Name == backend && st.State != host.StateReady {
			h.Close()
			if st.Err != nil {
				return nil, fmt.Errorf("server %s: %w", st.State, st.Err)
			}
			return nil, fmt.Errorf("server %s", st.State)
		}
	}
	return h, nil
}

// authOptions sets what the auth/* scenarios need on the server's
// configuration and the Host's options (issue 13 item 1): a
// [servers.NAME.oauth] table — the client_credentials grant for the
// auth/client-credentials-* scenarios, else the authorization-code grant with
// the suite's client metadata document and redirect port 3000 — with the
// suite's pre-registered client_id and client_secret from cctx when it gives
// them (dynamic registration otherwise); tokens in memory; and a headless
// authorization fetcher that follows the suite's authorization server's
// redirect instead of opening a browser. Scenarios outside auth/* are left
// as they are.
func authOptions(cctx map[string]any, srv *config.Server, opts *host.Options) {
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if !strings.HasPrefix(name, "auth/") {
		return
	}
	o := &config.OAuth{
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
		RedirectPort:      3000,
	}
	if strings.HasPrefix(name, "auth/client-credentials-") {
		o = &config.OAuth{Grant: config.GrantClientCredentials}
	}
	if id, ok := cctx["client_id"].(string); ok {
		o.ClientID = id
		if secret, ok := cctx["client_secret"].(string); ok {
			o.ClientSecret = secret
		}
	}
	srv.OAuth = o
	opts.TokenStore = &transport.MemoryTokenStore{}
	opts.Authorize = func(ctx context.Context, _ string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return oauthtest.Fetch(ctx, args)
	}
}

// call calls the catalogue tool name with args and fails on a transport
// error or a result with isError.
func call(ctx context.Context, h *host.Host, name string, args any) (*mcp.CallToolResult, error) {
	res, err := h.CallTool(ctx, name, args)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	if res.IsError {
		return res, fmt.Errorf("call %s: tool error: %s", name, text(res))
	}
	return res, nil
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// hasTool lists the catalogue and reports whether name is in it.
func hasTool(ctx context.Context, h *host.Host, name string) error {
	tools, err := h.Tools(ctx)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	for _, t := range tools {
		if t.Name == name {
			return nil
		}
	}
	return fmt.Errorf("tool %q not in the catalogue (%d tools)", name, len(tools))
}

// runInitialize: initialize, then list the tools.
func runInitialize(ctx context.Context, url string, cctx map[string]any) error {
	h, err := open(ctx, url, cctx, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	_, err = h.Tools(ctx)
	return err
}

// runToolsCall: call add_numbers with {a: 5, b: 3}.
func runToolsCall(ctx context.Context, url string, cctx map[string]any) error {
	h, err := open(ctx, url, cctx, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := hasTool(ctx, h, "add_numbers"); err != nil {
		return err
	}
	_, err = call(ctx, h, "add_numbers", map[string]any{"a": 5, "b": 3})
	return err
}

// runElicitationDefaults (SEP-1034): the server asks for a form whose
// fields have defaults; the user accepts without filling anything in, and
// the client must send the schema's defaults.
func runElicitationDefaults(ctx context.Context, url string, cctx map[string]any) error {
	var asked atomic.Int32
	opts := &host.Options{
		Elicit: func(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}
	h, err := open(ctx, url, cctx, opts)
	if err != nil {
		return err
	}
	defer h.Close()
	const tool = "test_client_elicitation_defaults"
	if err := hasTool(ctx, h, tool); err != nil {
		return err
	}
	if _, err := call(ctx, h, tool, nil); err != nil {
		return err
	}
	if asked.Load() == 0 {
		return errors.New("the server did not ask for elicitation")
	}
	return nil
}

// runSSERetry (SEP-1699): the server closes the call's SSE stream after
// announcing a retry interval; the client must reconnect (GET with
// Last-Event-ID, after the interval) and get the result on the new stream.
func runSSERetry(ctx context.Context, url string, cctx map[string]any) error {
	h, err := open(ctx, url, cctx, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	const tool = "test_reconnection"
	if err := hasTool(ctx, h, tool); err != nil {
		return err
	}
	_, err = call(ctx, h, tool, nil)
	return err
}

// runAuth: connect through the suite's authorization server (see
// authOptions), list the tools and call test-tool.
func runAuth(ctx context.Context, url string, cctx map[string]any) error {
	h, err := open(ctx, url, cctx, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := hasTool(ctx, h, "test-tool"); err != nil {
		return err
	}
	_, err = call(ctx, h, "test-tool", nil)
	return err
}
