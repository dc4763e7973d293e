package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestGatewayReadme builds the README's gateway program ("The gateway in
// Go") as an embedder would (a module of its own that requires toolhost
// through a replace, offline) and runs it on a configuration with the
// fixture server: a real MCP client calls a tool whose server elicits, the
// program relays the elicitation to that client, and its /metrics counts
// the call. Without gateway.Relay the elicitation is declined and nothing
// is counted.
func TestGatewayReadme(t *testing.T) {
	root := testutil.Root()
	src := block(t, mdBlocks(t, filepath.Join(root, "README.md")), "The gateway in Go", "go", 0)
	dir, _ := readmeModule(t, root, "program", src, func(sh func(string) string) {
		sh("go mod init example.com/program && go mod edit -require=github.com/toolhost/toolhost@v0.0.0 -replace=github.com/toolhost/toolhost=../toolhost")
	})
	cfg := "[servers.fx]\ncommand = \"" + testutil.Fixture(t) + "\"\nargs = [\"-client\", \"-protocol\", \"2025-11-25\"]\n\n[serve]\nlisten = \"127.0.0.1:0\"\n"
	if err := os.WriteFile(filepath.Join(dir, "toolhost.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(filepath.Join(dir, "program"))
	cmd.Dir = dir
	var stderr strings.Builder // read once the program has exited
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout := bufio.NewReader(out)
	line, err := stdout.ReadString('\n')
	exited := make(chan error, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
			t.Logf("program stderr:\n%s", stderr.String())
		}
	})
	if err != nil || !strings.HasPrefix(line, "serving MCP at http://") {
		t.Fatalf("first line %q, %v", line, err)
	}
	endpoint := strings.TrimSpace(strings.TrimPrefix(line, "serving MCP at "))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__elicit"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), `action=accept content={\"age\":36,\"name\":\"Ada\"}`) {
		t.Errorf("the elicitation was not relayed to the client: %s", b)
	}
	_ = cs.Close()

	resp, err := http.Get(strings.TrimSuffix(endpoint, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `mcp_invocations_total{backend="fx",outcome="ok",profile="",tool="fx__elicit"} 1`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, metrics)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	stopped = true
	if err := <-exited; err != nil {
		t.Errorf("the program did not exit cleanly on SIGTERM: %v\n%s", err, stderr.String())
	}
}
