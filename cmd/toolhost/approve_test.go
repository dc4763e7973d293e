package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestApproveCLI: trust-first pins written by one command are what the
// next sees (a SQLite file); a changed description (with an escape
// sequence and invisible Unicode tag characters in it) is quarantined;
// toolhost approve lists it, --diff shows the change escaped and approves
// nothing, approving a name with nothing waiting fails, and approving the
// backend releases the tool.
func TestApproveCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("HOME", dir)
	desc := filepath.Join(dir, "desc")
	os.WriteFile(desc, []byte("Echo the text back."), 0o600)
	cfg := writeConfig(t, `
[host]
pin = "trust-first"
audit_log = "`+filepath.Join(dir, "audit.jsonl")+`"

[store]
url = "sqlite://`+filepath.Join(dir, "toolhost.db")+`"

[servers.fx]
command = "@FIXTURE@"
args = ["-describe", "`+desc+`"]
`)
	code, out, errOut := runCLI("--config", cfg, "tools")
	if code != 0 || !strings.Contains(out, "fx__echo") {
		t.Fatalf("tools: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI("--config", cfg, "approve")
	if code != 0 || !strings.Contains(out, "nothing waits for approval") {
		t.Fatalf("approve with nothing waiting: %d %s", code, out)
	}
	// The rug pull: an ANSI escape and hidden tag characters ("AB").
	os.WriteFile(desc, []byte("Echo the text back.\x1b[2J\U000E0041\U000E0042 secretly"), 0o600)
	code, out, errOut = runCLI("--config", cfg, "tools")
	if code != 0 || strings.Contains(out, "fx__echo") || !strings.Contains(out, "fx__add") {
		t.Fatalf("tools after the change: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("--config", cfg, "call", "fx__echo", "--args", `{"text":"x"}`)
	if code == 0 || !strings.Contains(errOut, "its description changed since it was approved") {
		t.Fatalf("call of a quarantined tool: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI("--config", cfg, "approve")
	if code != 0 || !strings.Contains(out, "fx__echo") || !strings.Contains(out, "description changed") {
		t.Fatalf("approve list: %d\n%s", code, out)
	}
	code, out, _ = runCLI("--config", cfg, "approve", "--diff", "fx__echo")
	if code != 0 || !strings.Contains(out, "@@ description @@") || !strings.Contains(out, `-"Echo the text back."`) ||
		!strings.Contains(out, `\U000e0041\U000e0042 secretly`) || !strings.Contains(out, `+"Echo the text back.\u001b[2J`) {
		t.Fatalf("diff: %d\n%s", code, out)
	}
	if !strings.Contains(out, "warning: description: hidden Unicode character U+E0041") {
		t.Errorf("diff does not warn about the hidden characters:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\U000E0041") {
		t.Fatalf("diff output carries raw control or tag characters: %q", out)
	}
	code, _, errOut = runCLI("--config", cfg, "approve", "fx__nope")
	if code != exitCallError || !strings.Contains(errOut, "fx__nope: no definition waits") {
		t.Fatalf("approve of a name with nothing waiting: %d %s", code, errOut)
	}
	if code, _, _ = runCLI("--config", cfg, "approve", "--all", "fx"); code != exitUsage {
		t.Fatalf("--all with names: %d", code)
	}
	// --diff approved nothing: still quarantined.
	if _, out, _ = runCLI("--config", cfg, "tools"); strings.Contains(out, "fx__echo") {
		t.Fatal("--diff approved")
	}
	code, out, errOut = runCLI("--config", cfg, "approve", "fx")
	if code != 0 || !strings.Contains(out, "approved fx__echo (fx, sha256 ") {
		t.Fatalf("approve fx: %d\n%s\n%s", code, out, errOut)
	}
	if _, out, _ = runCLI("--config", cfg, "tools"); !strings.Contains(out, "fx__echo") {
		t.Fatalf("approved tool not listed:\n%s", out)
	}
	// The approval is audited as the REST API's is: who approved which tool.
	var approved []map[string]any
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	for _, line := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["op"] == "admin/approve_tool" {
			approved = append(approved, rec)
		}
	}
	if len(approved) != 1 || approved[0]["tool"] != "fx__echo" || approved[0]["outcome"] != "ok" ||
		!strings.HasPrefix(fmt.Sprint(approved[0]["client"]), "cli") {
		t.Fatalf("audit records of the approval: %v\n%s", approved, audit)
	}
	code, out, _ = runCLI("--config", cfg, "approve", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("approve --json after approval: %d %q", code, out)
	}
}

// TestREADMEToolPinning: the README's example configuration of "Tool
// pinning" loads, with the modes it says.
func TestREADMEToolPinning(t *testing.T) {
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	cfg, err := config.Parse([]byte(block(t, blocks, "Tool pinning", "toml", 0)), &config.Options{Name: "README.md"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PinOf("github") != config.PinApprove || cfg.Host.Pin != config.PinTrustFirst || !cfg.PinsOn() {
		t.Fatalf("pin modes: host %q, github %q", cfg.Host.Pin, cfg.PinOf("github"))
	}
	sh := block(t, blocks, "Tool pinning", "sh", 0)
	for _, want := range []string{"toolhost approve   ", "toolhost approve --diff github", "toolhost approve github__create_issue"} {
		if !strings.Contains(sh, want) {
			t.Errorf("README sh block lacks %q", want)
		}
	}
}
