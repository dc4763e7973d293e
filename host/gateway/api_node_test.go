package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// nodeInvoke is run by node: it calls POST /api/v1/mcp/invoke with
// fetch (Node 18+), then once without a token, and prints both answers.
const nodeInvoke = `
const [base, token] = process.argv.slice(1);
(async () => {
  const r = await fetch(base + "/api/v1/mcp/invoke", {
    method: "POST",
    headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    body: JSON.stringify({correlation_id: "node-1", server_id: "fx", tool_name: "echo", params: {text: "from node"}}),
  });
  const noauth = await fetch(base + "/api/v1/mcp/invoke", {method: "POST", body: "{}"});
  console.log(JSON.stringify({status: r.status, body: await r.json(), noauth: noauth.status, www: noauth.headers.get("www-authenticate")}));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestInvokeFromNode: a non-Go client (Node's fetch) calls invoke through
// a real `toolhost serve --listen 127.0.0.1:0` child process.
func TestInvokeFromNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cfgPath := t.TempDir() + "/toolhost.toml"
	src := strings.ReplaceAll(testConfig, "@FIXTURE@", testutil.Fixture(t))
	if err := os.WriteFile(cfgPath, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	base := testutil.ServeHTTP(t, bin, cfgPath)
	out, err := exec.CommandContext(ctx, node, "-e", nodeInvoke, base, "alice-token-0123456789").Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var got struct {
		Status int `json:"status"`
		Body   struct {
			CorrelationID string         `json:"correlation_id"`
			Success       bool           `json:"success"`
			Result        map[string]any `json:"result"`
		} `json:"body"`
		NoAuth int    `json:"noauth"`
		WWW    string `json:"www"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	if got.Status != 200 || !got.Body.Success || got.Body.CorrelationID != "node-1" || !strings.Contains(string(out), "from node") {
		t.Errorf("invoke from node: %s", out)
	}
	if got.NoAuth != 401 || !strings.HasPrefix(got.WWW, "Bearer") {
		t.Errorf("invoke from node without a token: %d %q", got.NoAuth, got.WWW)
	}
}
