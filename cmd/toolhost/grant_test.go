package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/testutil"
)

// grantCLIConfig has a tool that needs a grant and one that asks; its
// store is a SQLite file of the test's.
const grantCLIConfig = `
[servers.fixture]
command = "@FIXTURE@"

[tools.fixture__echo]
grant = "required"

[tools.fixture__add]
grant = "ask"

[profiles.review]

[serve.clients.alice]
token = "alice-token-0123456789"

[store]
url = "sqlite://@DB@"
`

func grantCLI(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	return writeConfig(t, strings.ReplaceAll(grantCLIConfig, "@DB@", filepath.Join(state, "grants.db")))
}

func TestGrantCLI(t *testing.T) {
	cfg := grantCLI(t)
	call := []string{"--config", cfg, "call", "--profile", "review", "fixture__echo", "--args", `{"text":"hi"}`}
	code, _, stderr := runCLI(call...)
	if code != exitDenied || !strings.Contains(stderr, "fixture__echo needs a grant: ask the operator to run `toolhost grant profile:review fixture__echo --ttl 15m`") {
		t.Fatalf("call without a grant: exit %d, stderr %q", code, stderr)
	}
	// Unknown subjects are named, with the ones there are.
	code, _, stderr = runCLI("--config", cfg, "grant", "'; DROP TABLE grants; --", "fixture__echo", "--ttl", "15m")
	if code != exitUsage || !strings.Contains(stderr, "clients: alice; profiles: review") {
		t.Fatalf("unknown subject: exit %d, stderr %q", code, stderr)
	}
	for _, bad := range [][]string{
		{"grant", "review", "fixture__echo"},
		{"grant", "review", "fixture__echo", "--ttl", "soon"},
		{"grant", "review", "fixture__echo", "--ttl", "-5m"},
		{"grant", "review", "fixture__echo", "--ttl", "400d"},
		{"grant", "review", "fixture/echo", "--ttl", "5m"},
		{"grant", "review", "fixture__echo", "--ttl", "5m", "--uses", "-1"},
		{"revoke"},
		{"grants", "x"},
	} {
		if code, _, stderr := runCLI(append([]string{"--config", cfg}, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", bad, code, stderr, exitUsage)
		}
	}

	code, stdout, stderr := runCLI("--config", cfg, "grant", "review", "fixture__echo", "--ttl", "15m", "--uses", "1", "--reason", "one test call", "--json")
	if code != exitOK {
		t.Fatalf("grant: exit %d: %s", code, stderr)
	}
	var g store.Grant
	if err := json.Unmarshal([]byte(stdout), &g); err != nil || g.ID == "" || g.SubjectKind != "profile" || g.UsesLeft == nil || *g.UsesLeft != 1 || !strings.HasPrefix(g.CreatedBy, "cli:") {
		t.Fatalf("grant --json: %v %s", err, stdout)
	}
	if code, _, stderr := runCLI(call...); code != exitOK {
		t.Fatalf("call with the grant: exit %d: %s", code, stderr)
	}
	if code, _, _ := runCLI(call...); code != exitDenied {
		t.Fatalf("a second call of a single-use grant: exit %d", code)
	}
	code, stdout, _ = runCLI("--config", cfg, "grants", "--json")
	if code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Fatalf("grants after the use: %d %s", code, stdout)
	}
	code, stdout, _ = runCLI("--config", cfg, "grants", "--all")
	if code != exitOK || !strings.Contains(stdout, g.ID) || !strings.Contains(stdout, "spent") || !strings.Contains(stdout, "profile:review") {
		t.Fatalf("grants --all: %d %s", code, stdout)
	}

	code, stdout, _ = runCLI("--config", cfg, "grant", "alice", "fixture__*", "--ttl", "1h")
	if code != exitOK || !strings.Contains(stdout, "client alice may call fixture__* until") {
		t.Fatalf("grant alice: %d %s", code, stdout)
	}
	id := strings.TrimSuffix(strings.Fields(stdout)[1], ":")
	if code, stdout, stderr := runCLI("--config", cfg, "revoke", id); code != exitOK || !strings.Contains(stdout, "revoked "+id) {
		t.Fatalf("revoke: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("--config", cfg, "revoke", id); code != exitUsage || !strings.Contains(stderr, "no such grant") {
		t.Fatalf("revoke again: %d %s", code, stderr)
	}
}

// TestGrantCLIAsk: grant = "ask" in toolhost call asks on the terminal.
func TestGrantCLIAsk(t *testing.T) {
	cfg := grantCLI(t)
	oldIn, oldTerm := stdin, stdinIsTerminal
	t.Cleanup(func() { stdin, stdinIsTerminal = oldIn, oldTerm })
	stdinIsTerminal = func() bool { return true }
	call := []string{"--config", cfg, "call", "fixture__add", "--args", `{"a":1,"b":2}`}

	stdin = strings.NewReader("y\nonce\n")
	code, stdout, stderr := runCLI(call...)
	if code != exitOK || !strings.Contains(stderr, "toolhost (during fixture__add) asks:") || !strings.Contains(stderr, "Allow fixture__add with these arguments?") || !strings.Contains(stdout, "3") {
		t.Fatalf("approved once: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdin = strings.NewReader("y\ndeny\n")
	code, _, stderr = runCLI(call...)
	if code != exitDenied || !strings.Contains(stderr, "fixture__add needs a grant (approval: the user denied it)") {
		t.Fatalf("denied: exit %d, stderr %q", code, stderr)
	}
	stdinIsTerminal = func() bool { return false }
	code, _, stderr = runCLI(call...)
	if code != exitDenied || !strings.Contains(stderr, "declined") {
		t.Fatalf("no terminal: exit %d, stderr %q", code, stderr)
	}
}

// TestGrantReadme runs the README's "Grants and approval" commands on its
// configuration (the store in a temporary directory; no backend starts).
func TestGrantReadme(t *testing.T) {
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789")
	toml := strings.Replace(block(t, blocks, "Grants and approval", "toml", 0), "/var/lib/toolhost/toolhost.db", filepath.Join(state, "toolhost.db"), 1)
	cfg := writeConfig(t, toml)
	var id string
	for _, line := range strings.Split(strings.TrimSpace(block(t, blocks, "Grants and approval", "sh", 0)), "\n") {
		args, err := shellWords(line)
		if err != nil || args[0] != "toolhost" {
			t.Fatalf("README line %q: %v", line, err)
		}
		if args[1] == "revoke" {
			args[2] = id
		}
		code, stdout, stderr := runCLI(append([]string{"--config", cfg}, args[1:]...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", line, code, stdout, stderr)
		}
		if args[1] == "grant" {
			id = strings.TrimSuffix(strings.Fields(stdout)[1], ":")
		}
		if args[1] == "grants" && !strings.Contains(stdout, id) {
			t.Fatalf("toolhost grants does not list %s:\n%s", id, stdout)
		}
	}
}

// shellWords splits a README command line: words, and "quoted strings".
func shellWords(line string) ([]string, error) {
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, errors.New("unterminated quote")
			}
			out = append(out, line[1:1+end])
			line = line[2+end:]
			continue
		}
		w, rest, _ := strings.Cut(line, " ")
		out = append(out, w)
		line = rest
	}
	return out, nil
}
