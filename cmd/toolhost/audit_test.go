package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIAuditKey: toolhost audit key shows the key_id the records carry;
// rotate-key replaces the key, and the next call's record carries the new
// key_id and another args_hmac for the same arguments; check names the key.
func TestCLIAuditKey(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, "[host]\naudit_log = \""+log+"\"\n\n[servers.fixture]\ncommand = \"@FIXTURE@\"\n")
	idRE := regexp.MustCompile(`key_id:? ([0-9a-f]{16})`)

	if code, stdout, stderr := runCLI("audit", "key"); code != exitOK || !strings.Contains(stdout, "none yet") {
		t.Fatalf("audit key before any call: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI("--config", cfg, "check"); code != exitOK || !strings.Contains(stdout, "(created at the first audited call)") {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	last := func() (hash, id string) {
		t.Helper()
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var rec struct {
			Hash string `json:"args_hmac"`
			ID   string `json:"key_id"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
			t.Fatal(err)
		}
		return rec.Hash, rec.ID
	}
	call := func() {
		t.Helper()
		if code, stdout, stderr := runCLI("--config", cfg, "call", "fixture__echo", "--args", `{"text":"same"}`); code != exitOK {
			t.Fatalf("call: exit %d\n%s%s", code, stdout, stderr)
		}
	}
	call()
	hash1, id1 := last()
	code, stdout, stderr := runCLI("audit", "key")
	if m := idRE.FindStringSubmatch(stdout); code != exitOK || m == nil || m[1] != id1 {
		t.Fatalf("audit key: exit %d\n%s%s\nwant key_id %s (the record's)", code, stdout, stderr, id1)
	}
	if _, stdout, _ := runCLI("--config", cfg, "check"); !strings.Contains(stdout, "(key_id "+id1+")") {
		t.Errorf("check does not name key_id %s:\n%s", id1, stdout)
	}
	code, stdout, stderr = runCLI("audit", "rotate-key")
	m := idRE.FindStringSubmatch(stdout)
	if code != exitOK || m == nil || m[1] == id1 || !strings.Contains(stdout, "(was "+id1+")") {
		t.Fatalf("rotate-key: exit %d\n%s%s", code, stdout, stderr)
	}
	call()
	if hash2, id2 := last(); id2 != m[1] || hash2 == hash1 {
		t.Errorf("after rotate-key: key_id %s args_hmac %s; want key_id %s and a hash other than %s", id2, hash2, m[1], hash1)
	}

	// A key the host would refuse: call fails (exit 2) and says why.
	path := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "toolhost", "audit.key")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("--config", cfg, "call", "fixture__echo", "--args", `{"text":"x"}`); code != exitUsage || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("a world-readable key: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI("--config", cfg, "check"); code != exitUsage || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("check with a world-readable key: exit %d\n%s", code, stderr)
	}
}
