package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// tsResult is what testdata/tsclient/client.mjs prints.
type tsResult struct {
	Server struct{ Name, Version string }
	Tools  []string
	Result struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	Progress []struct { // with PROGRESS set
		Progress, Total float64
		Message         string
	}
}

func runTSClient(t *testing.T, env []string, args ...string) tsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{testutil.TSClient(t)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tsclient %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	var r tsResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("tsclient output %q: %v", out, err)
	}
	return r
}

// TestTypeScriptClient drives `toolhost serve` with the official
// TypeScript SDK's client, over stdio (a real toolhost child process) and
// Streamable HTTP with a token.
func TestTypeScriptClient(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		bin := testutil.GoBinary(t, "./cmd/toolhost")
		cfgPath := t.TempDir() + "/toolhost.toml"
		src := strings.ReplaceAll(strings.Split(testConfig, "[serve.clients.alice]")[0], "@FIXTURE@", testutil.Fixture(t))
		if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runTSClient(t, []string{"CALL=fx__echo", `ARGS={"text":"from TypeScript"}`}, "stdio", bin, "--config", cfgPath, "serve", "--stdio")
		if r.Server.Name != "toolhost" || !slices.Contains(r.Tools, "fx__echo") || slices.Contains(r.Tools, "fx__crash") {
			t.Errorf("server %+v, tools %v", r.Server, r.Tools)
		}
		if r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "from TypeScript" {
			t.Errorf("result %+v", r.Result)
		}
	})
	t.Run("http", func(t *testing.T) {
		f := start(t, testConfig)
		url := serveLoopback(t, f)
		r := runTSClient(t, []string{"TOKEN=alice-token-0123456789", "CALL=fx__add", `ARGS={"a":40,"b":2}`}, "http", url)
		if !slices.Equal(r.Tools, []string{"fx__add", "fx__echo"}) {
			t.Errorf("alice's tools over HTTP = %v", r.Tools)
		}
		if r.Result.IsError || len(r.Result.Content) == 0 || !strings.Contains(r.Result.Content[0].Text, "42") {
			t.Errorf("result %+v", r.Result)
		}
		// No token: the client cannot connect.
		ctx2, cancel2 := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel2()
		cmd := exec.CommandContext(ctx2, "node", testutil.TSClient(t), "http", url)
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no bearer token") {
			t.Errorf("without a token: err %v, output %s; want the 401 no bearer token", err, out)
		}
	})
}

// inspector runs the MCP Inspector's CLI mode with args and returns what
// it printed on stdout.
func inspector(t *testing.T, env []string, args ...string) string {
	t.Helper()
	testutil.NeedNpx(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", append([]string{"-y", testutil.InspectorPackage, "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	return string(out)
}

// TestInspectorCLI drives toolhost serve with the MCP Inspector's CLI, over
// stdio (a real toolhost child process) and Streamable HTTP with a token.
func TestInspectorCLI(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		bin := testutil.GoBinary(t, "./cmd/toolhost")
		cfgPath := t.TempDir() + "/toolhost.toml"
		src := strings.ReplaceAll(strings.Split(testConfig, "[serve.clients.alice]")[0], "@FIXTURE@", testutil.Fixture(t))
		if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// The configuration comes by environment: the Inspector reads
		// --config as its own flag.
		out := inspector(t, nil, "-e", "TOOLHOST_CONFIG="+cfgPath, "-e", "XDG_STATE_HOME="+os.Getenv("XDG_STATE_HOME"), "--method", "tools/call", "--tool-name", "fx__echo", "--tool-arg", "text=from the inspector", "--", bin, "serve", "--stdio")
		if !strings.Contains(out, `"text": "from the inspector"`) || strings.Contains(out, "mcpfixture") {
			t.Errorf("inspector stdio call printed (want the text, and not the backend's own serverInfo):\n%s", out)
		}
	})
	t.Run("http", func(t *testing.T) {
		f := start(t, testConfig)
		url := serveLoopback(t, f)
		out := inspector(t, nil, "--transport", "http", "--server-url", url, "--header", "Authorization: Bearer alice-token-0123456789", "--method", "tools/list")
		if !strings.Contains(out, `"fx__echo"`) || strings.Contains(out, `"fx__stats"`) {
			t.Errorf("inspector tools/list as alice (review) printed:\n%s", out)
		}
	})
}
