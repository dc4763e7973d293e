package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
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
	cmd := exec.CommandContext(ctx, bin, "--config", cfgPath, "serve", "--listen", "127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-drained // the child exited: its stderr is closed
		_ = cmd.Wait()
	}()
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/mcp`)
	sc := bufio.NewScanner(stderr)
	var base string
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	go func() { // keep draining the child's stderr
		defer close(drained)
		for sc.Scan() {
		}
	}()
	if base == "" {
		t.Fatalf("serve did not say where it listens:\n%s", log.String())
	}
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
