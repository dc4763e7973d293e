package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

const grantServeConfig = `
[servers.fixture]
command = "@FIXTURE@"

[tools.fixture__echo]
grant = "required"

[tools.fixture__add]
grant = "ask"

[serve.clients.alice]
token = "alice-token-0123456789"

[serve.clients.bob]
token = "bob-token-0123456789ab"

[serve.clients.ops]
token = "ops-token-0123456789ab"
admin = true

[store]
url = "sqlite://@DB@"
`

// grantClient connects a go-sdk client to endpoint with token; elicit,
// when not nil, answers elicitations (and declares the capability).
func grantClient(t *testing.T, endpoint, token string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "grant-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func wantGrantResult(t *testing.T, res *mcp.CallToolResult, err error, hint string) {
	t.Helper()
	if err != nil {
		t.Fatalf("want an isError result, got the error %v", err)
	}
	b, _ := json.Marshal(res)
	if !res.IsError || host.ResultKind(res) != host.KindGrantRequired || !strings.Contains(string(b), hint) {
		t.Fatalf("want a grant_required isError result saying %q, got %s", hint, b)
	}
}

// TestGrantThroughServe: a real toolhost serve, go-sdk clients over
// Streamable HTTP: a tool with grant = "required" is refused with an
// isError result the model can read until an operator grants it (the CLI,
// in another process, on the same store; or the REST API); grant = "ask"
// asks the client that made the call (once / for 15 minutes / deny), and a
// client without the elicitation capability is refused.
func TestGrantThroughServe(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	cfg := writeConfig(t, strings.ReplaceAll(grantServeConfig, "@DB@", filepath.Join(state, "grants.db")))
	endpoint := startServeCmd(t, cfg)
	base := strings.TrimSuffix(endpoint, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var (
		mu      sync.Mutex
		answers []string
		asked   []*mcp.ElicitParams
	)
	alice := grantClient(t, endpoint, "alice-token-0123456789", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params)
		if len(answers) == 0 {
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		a := answers[0]
		answers = answers[1:]
		if a == "decline" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": a}}, nil
	})
	bob := grantClient(t, endpoint, "bob-token-0123456789ab", nil)
	answer := func(a ...string) { mu.Lock(); answers = append(answers, a...); mu.Unlock() }
	echo := &mcp.CallToolParams{Name: "fixture__echo", Arguments: map[string]any{"text": "hi"}}
	add := &mcp.CallToolParams{Name: "fixture__add", Arguments: map[string]any{"a": 1, "b": 2}}

	// required
	res, err := alice.CallTool(ctx, echo)
	wantGrantResult(t, res, err, "toolhost grant alice fixture__echo --ttl 15m")
	if code, _, stderr := runCLI("--config", cfg, "grant", "alice", "fixture__echo", "--ttl", "15m", "--uses", "1"); code != exitOK {
		t.Fatalf("toolhost grant: %d %s", code, stderr)
	}
	if res, err := alice.CallTool(ctx, echo); err != nil || res.IsError {
		t.Fatalf("with the CLI's grant: %v %+v", err, res)
	}
	res, err = alice.CallTool(ctx, echo)
	wantGrantResult(t, res, err, "needs a grant")
	res, err = bob.CallTool(ctx, echo)
	wantGrantResult(t, res, err, "toolhost grant bob fixture__echo")

	// ask, a client with elicitation
	answer("deny")
	res, err = alice.CallTool(ctx, add)
	wantGrantResult(t, res, err, "the user denied it")
	answer("decline")
	res, err = alice.CallTool(ctx, add)
	wantGrantResult(t, res, err, "the user answered decline")
	answer("once")
	if res, err := alice.CallTool(ctx, add); err != nil || res.IsError {
		t.Fatalf("approved once: %v %+v", err, res)
	}
	answer("deny")
	res, err = alice.CallTool(ctx, add)
	wantGrantResult(t, res, err, "denied")
	answer("for 15 minutes")
	if res, err := alice.CallTool(ctx, add); err != nil || res.IsError {
		t.Fatalf("approved for 15 minutes: %v %+v", err, res)
	}
	mu.Lock()
	n := len(asked)
	first := asked[0]
	mu.Unlock()
	if res, err := alice.CallTool(ctx, add); err != nil || res.IsError {
		t.Fatalf("within the approved 15 minutes: %v %+v", err, res)
	}
	mu.Lock()
	if len(asked) != n {
		t.Errorf("asked again within the approved 15 minutes")
	}
	mu.Unlock()
	if !strings.Contains(first.Message, "Allow fixture__add with these arguments?") || !strings.Contains(first.Message, `{"a":1,"b":2}`) {
		t.Errorf("the question: %q", first.Message)
	}
	// ask, a client without elicitation
	res, err = bob.CallTool(ctx, add)
	wantGrantResult(t, res, err, "did not declare the elicitation capability")

	// REST: invoke refused with 403 grant_required; the grants API.
	rest := func(token, method, path, body string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := rest("bob-token-0123456789ab", "POST", "/api/v1/mcp/invoke", `{"name":"fixture__echo","params":{"text":"x"}}`)
	if code != http.StatusForbidden || !strings.Contains(string(body), `"kind":"grant_required"`) {
		t.Fatalf("invoke without a grant: %d %s", code, body)
	}
	if code, body := rest("bob-token-0123456789ab", "POST", "/api/v1/grants", `{"subject":"bob","tool":"fixture__echo","ttl":"5m"}`); code != http.StatusForbidden {
		t.Fatalf("a non-admin made a grant: %d %s", code, body)
	}
	for _, bad := range []string{
		`{"subject":"'; DROP TABLE grants; --","tool":"fixture__echo","ttl":"5m"}`,
		`{"subject":"bob","tool":"fixture__echo","ttl":"forever"}`,
		`{"subject":"bob","tool":"fixture__echo","ttl":"5m","extra":1}`,
		`{"subject":"bob","tool":"fixture/echo","ttl":"5m"}`,
		`not json`,
	} {
		if code, body := rest("ops-token-0123456789ab", "POST", "/api/v1/grants", bad); code != http.StatusBadRequest {
			t.Errorf("POST %s: %d %s, want 400", bad, code, body)
		}
	}
	code, body = rest("ops-token-0123456789ab", "POST", "/api/v1/grants", `{"subject":"client:bob","tool":"fixture__*","ttl":"5m","reason":"API test"}`)
	var g store.Grant
	if code != http.StatusCreated || json.Unmarshal(body, &g) != nil || g.Subject != "bob" || g.CreatedBy != "api:ops" {
		t.Fatalf("POST /api/v1/grants: %d %s", code, body)
	}
	if code, body := rest("bob-token-0123456789ab", "POST", "/api/v1/mcp/invoke", `{"name":"fixture__echo","params":{"text":"x"}}`); code != http.StatusOK {
		t.Fatalf("invoke with the API's grant: %d %s", code, body)
	}
	code, body = rest("ops-token-0123456789ab", "GET", "/api/v1/grants", "")
	var list struct{ Grants []store.Grant }
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Grants) != 2 { // bob's, and alice's 15 minutes
		t.Fatalf("GET /api/v1/grants: %d %s", code, body)
	}
	if code, body := rest("ops-token-0123456789ab", "DELETE", "/api/v1/grants/"+g.ID, ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _ := rest("ops-token-0123456789ab", "DELETE", "/api/v1/grants/"+g.ID, ""); code != http.StatusNotFound {
		t.Fatalf("DELETE again: %d, want 404", code)
	}
	code, body = rest("ops-token-0123456789ab", "GET", "/api/v1/grants?all=true", "")
	if code != http.StatusOK || !strings.Contains(string(body), `"revoked"`) {
		t.Fatalf("GET all: %d %s", code, body)
	}
	res, err = bob.CallTool(ctx, echo)
	wantGrantResult(t, res, err, "needs a grant")
}
