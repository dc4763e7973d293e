package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// bearerRT adds a bearer token to every request.
type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeRateLimits runs the README's "Rate limits" configuration (plus a
// tool limited to one call an hour and a second client) in a real `toolhost
// serve`, and checks what each API answers over a limit: REST 429 with
// Retry-After (whole seconds) and kind rate_limited; MCP (the go-sdk
// client over Streamable HTTP) an isError result with _meta kind
// rate_limited and io.toolhost/retry-after; a client's limit counts its
// REST and MCP calls together.
func TestServeRateLimits(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	readme := block(t, mdBlocks(t, filepath.Join(testutil.Root(), "README.md")), "Rate limits", "toml", 0)
	const botToken, aliceToken = "bot-token-0123456789abcdef", "alice-token-0123456789abc"
	t.Setenv("BOT_TOKEN", botToken)
	cfg := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n\n"+readme+`
[tools.fx__add]
rate = "1/h"

[serve.clients.alice]
token   = "`+aliceToken+`"
profile = "readonly"
`)
	p := startServeArgs(t, "", "--config", cfg, "serve", "--listen", "127.0.0.1:0")
	base := strings.TrimSuffix(p.url, "/mcp")

	invoke := func(token, body string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/api/v1/mcp/invoke", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return resp.StatusCode, resp.Header, m
	}
	errOf := func(m map[string]any) (kind, msg string) {
		e, _ := m["error"].(map[string]any)
		kind, _ = e["kind"].(string)
		msg, _ = e["message"].(string)
		return kind, msg
	}

	start := time.Now() // bot's first call
	// REST: the tool's 1/h: one call, then 429 for about an hour.
	add := `{"name":"fx__add","params":{"a":1,"b":2}}`
	if code, _, m := invoke(botToken, add); code != 200 {
		t.Fatalf("first fx__add: %d %v", code, m)
	}
	code, hdr, m := invoke(botToken, add)
	kind, msg := errOf(m)
	ra, err := strconv.Atoi(hdr.Get("Retry-After"))
	if code != http.StatusTooManyRequests || kind != host.KindRateLimited || err != nil || ra < 3000 || ra > 3600 ||
		!strings.Contains(msg, `tools.fx__add.rate "1/h"`) || m["attempts"] != 0.0 {
		t.Fatalf("second fx__add: %d, Retry-After %q, body %v", code, hdr.Get("Retry-After"), m)
	}

	// REST: the README's fx__echo "30/m burst 5": refused within a few
	// calls (a token comes every 2s), with Retry-After of 1 or 2 s.
	echo := `{"name":"fx__echo","params":{"text":"x"}}`
	refusedAt := 0
	for i := 1; i <= 40 && refusedAt == 0; i++ {
		code, hdr, m := invoke(botToken, echo)
		switch code {
		case 200:
		case 429:
			refusedAt = i
			if ra := hdr.Get("Retry-After"); ra != "1" && ra != "2" {
				t.Errorf("fx__echo refused with Retry-After %q", ra)
			}
			if _, msg := errOf(m); !strings.Contains(msg, `tools.fx__echo.rate "30/m burst 5"`) {
				t.Errorf("fx__echo refused by %q", msg)
			}
		default:
			t.Fatalf("fx__echo call %d: %d %v", i, code, m)
		}
	}
	if refusedAt < 6 {
		t.Fatalf("fx__echo refused at call %d; want after its burst of 5", refusedAt)
	}

	// MCP: alice (another client, profile readonly) is under the same
	// tool limits.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "rate-test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: p.url, HTTPClient: &http.Client{Transport: bearerRT(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := connect(aliceToken)
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil {
		t.Fatal(err)
	}
	secs, _ := res.Meta[host.MetaRetryAfter].(float64)
	if !res.IsError || res.Meta[host.MetaErrorKind] != host.KindRateLimited || secs < 3000 || secs > 3600 ||
		len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "try again in") {
		t.Fatalf("alice's fx__add over MCP: %+v (meta %v)", res, res.Meta)
	}

	// The client's limit ("60/m") counts bot's REST and MCP calls
	// together: its MCP calls of a tool without a limit of its own are
	// refused once its 60 tokens (and those that came since) are used.
	bot := connect(botToken)
	var refused *mcp.CallToolResult
	for i := 0; i < 300 && refused == nil; i++ {
		res, err := bot.CallTool(ctx, &mcp.CallToolParams{Name: "fx__big", Arguments: map[string]any{"bytes": 1}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			refused = res
			// bot's REST calls took refusedAt tokens (the refused
			// ones took none); one came each second since.
			if most := 60 - refusedAt + int(time.Since(start).Seconds()) + 1; i > most {
				t.Errorf("bot's limit (60/m) let %d MCP calls through after its %d REST calls; want at most %d", i, refusedAt, most)
			}
		}
	}
	if refused == nil || refused.Meta[host.MetaErrorKind] != host.KindRateLimited ||
		!strings.Contains(refused.Content[0].(*mcp.TextContent).Text, `serve.clients.bot.rate "60/m"`) {
		t.Fatalf("bot was not refused by its own limit: %+v", refused)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
}
