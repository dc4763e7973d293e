package main

import (
	"strings"
	"testing"
)

// TestCLIElicit: a server's elicitation during `toolhost call` is a form on
// stderr answered on stdin when stdin is a terminal, and is declined with a
// message saying why when it is not.
func TestCLIElicit(t *testing.T) {
	cfg := writeConfig(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-client", "-protocol", "2025-11-25"]
`)
	oldIn, oldTerm := stdin, stdinIsTerminal
	t.Cleanup(func() { stdin, stdinIsTerminal = oldIn, oldTerm })

	stdinIsTerminal = func() bool { return true }
	// Fields in name order: age (an invalid answer, then 36), api_token
	// (optional, left out), name (required: asked again after an empty
	// line).
	stdin = strings.NewReader("y\nold\n36\n\n\nAda\n")
	code, stdout, stderr := runCLI("--config", cfg, "call", "fx__elicit")
	if code != 0 || strings.TrimSpace(stdout) != `action=accept content={"age":36,"name":"Ada"}` {
		t.Errorf("terminal: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"toolhost: server fx (during fx__elicit) asks:\n  Who are you?", "age (integer): ", "not an integer", "name (string, required): ", "  your name\n", "  required\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	stdin = strings.NewReader("n\n")
	code, stdout, _ = runCLI("--config", cfg, "call", "fx__elicit")
	if code != 0 || strings.TrimSpace(stdout) != `action=decline content=null` {
		t.Errorf("answered no: exit %d, stdout %q", code, stdout)
	}
	stdin = strings.NewReader("")
	code, stdout, _ = runCLI("--config", cfg, "call", "fx__elicit")
	if code != 0 || strings.TrimSpace(stdout) != `action=cancel content=null` {
		t.Errorf("EOF: exit %d, stdout %q", code, stdout)
	}

	stdinIsTerminal = func() bool { return false }
	code, stdout, stderr = runCLI("--config", cfg, "call", "fx__elicit")
	if code != 0 || strings.TrimSpace(stdout) != `action=decline content=null` ||
		!strings.Contains(stderr, "toolhost: server fx (during fx__elicit) asks for input (Who are you?); declined: stdin is not a terminal") {
		t.Errorf("not a terminal: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

func TestTermText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"a\nb\x1b[31m":          `a\nb\x1b[31m`,
		"rtl\u202eevil":         `rtl\u202eevil`,
		`quote "x"`:             `quote "x"`,
		strings.Repeat("é", 10): strings.Repeat("é", 5) + "…",
	} {
		if got := termText(in, 10); got != want {
			t.Errorf("termText(%q) = %q, want %q", in, got, want)
		}
	}
}
