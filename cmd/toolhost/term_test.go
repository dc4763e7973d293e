package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const forgeConfig = `
[servers.fixture]
command = "@FIXTURE@"
args = ["-hostile", "escapes"]

[policy]
default = "allow"
`

// noControl fails when out holds a terminal control character other than
// newline and tab, or a line a backend forged.
func noControl(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Errorf("%s carries control character %U: %q", what, r, out)
			return
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "toolhost: call denied: forged") {
			t.Errorf("%s has a forged line: %q", what, l)
		}
	}
}

// TestTerminalForgery: a server's tool descriptions, errors and results
// reach the terminal with control characters escaped; --json stays exact.
func TestTerminalForgery(t *testing.T) {
	cfg := writeConfig(t, forgeConfig)
	code, out, errOut := runCLI("--config", cfg, "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	noControl(t, "toolhost tools", out)
	if !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("tools: the escape is not shown escaped: %q", out)
	}

	code, out, _ = runCLI("--config", cfg, "tools", "--json")
	var tools []struct{ Name, Description string }
	if code != 0 || json.Unmarshal([]byte(out), &tools) != nil {
		t.Fatalf("tools --json: exit %d, %q", code, out)
	}
	exact := false
	for _, tl := range tools {
		exact = exact || tl.Name == "fixture__forge" && strings.Contains(tl.Description, "\x1b[2J")
	}
	if !exact {
		t.Errorf("tools --json does not carry the description exactly")
	}

	code, _, errOut = runCLI("--config", cfg, "call", "fixture__forge_rpc")
	if code == 0 {
		t.Fatal("forge_rpc succeeded")
	}
	noControl(t, "the error of call fixture__forge_rpc", errOut)

	code, _, errOut = runCLI("--config", cfg, "call", "fixture__forge_error")
	if code == 0 {
		t.Fatal("forge_error succeeded")
	}
	noControl(t, "stderr of call fixture__forge_error", errOut)

	code, out, _ = runCLI("--config", cfg, "call", "fixture__forge", "--json")
	if code != 0 || !strings.Contains(out, `\u001b[2J`) {
		t.Errorf("call --json: exit %d, %q", code, out)
	}
}

// TestResultEscapedOnTerminal: a result printed to a terminal has its
// control characters escaped; to a pipe it is written as is.
func TestResultEscapedOnTerminal(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok\x1b]0;pwned\x07\r\nline two"}, &mcp.ResourceLink{URI: "x://\x1b[2J", Name: "n"}}}
	var tty, pipe bytes.Buffer
	printResult(&tty, res, true)
	printResult(&pipe, res, false)
	noControl(t, "a result on a terminal", tty.String())
	if !strings.Contains(tty.String(), "line two") || !strings.Contains(pipe.String(), "\x1b]0;pwned") {
		t.Errorf("terminal %q, pipe %q", tty.String(), pipe.String())
	}
}
