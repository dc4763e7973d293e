package config

import (
	"strings"
	"testing"
)

func TestPolicyLoad(t *testing.T) {
	src := `
[host]
audit_log = "logs/audit.jsonl"
audit_redact = ["^ssn$", "pin"]

[servers.fs]
command = "x"
tools = ["read_*", "list_*"]
deny_tools = ["read_secret"]
max_output = "1MiB"

[policy]
allow = ["fs__*", "fs__read_*"]
deny = ["*__delete_*", "fs__*"]

[profiles.review]
allow = ["fs__list_*"]
deny = ["fs__list_secret"]
requires = ["fs"]
recommends = ["fs"]
`
	cfg, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host.AuditLog != "/base/logs/audit.jsonl" {
		t.Errorf("audit_log %q, want it resolved against the config dir", cfg.Host.AuditLog)
	}
	if len(cfg.Host.AuditRedactRE) != 2 || !cfg.Host.AuditRedactRE[1].MatchString("User_PIN") {
		t.Errorf("audit_redact not compiled case-insensitively: %v", cfg.Host.AuditRedactRE)
	}
	if cfg.Policy.Default != PolicyDeny {
		t.Errorf("default %q: an allow list without default means deny", cfg.Policy.Default)
	}
	if got := cfg.Servers["fs"].MaxOutput; got != 1<<20 {
		t.Errorf("max_output %d", got)
	}
	// Overlapping allow and deny load (deny wins) and are reported as dead.
	var dead []string
	for _, d := range cfg.DeadAllows() {
		dead = append(dead, d.Allow.String()+" by "+d.Deny.String())
	}
	want := []string{
		`policy.allow[0] "fs__*" by policy.deny[1] "fs__*"`,
		`policy.allow[1] "fs__read_*" by policy.deny[1] "fs__*"`,
		`profiles.review.allow[0] "fs__list_*" by policy.deny[1] "fs__*"`,
	}
	if strings.Join(dead, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead allows:\n%s\nwant:\n%s", strings.Join(dead, "\n"), strings.Join(want, "\n"))
	}
	s := cfg.Servers["fs"]
	for name, want := range map[string]string{
		"read_file":   "true servers.fs.tools[0] \"read_*\"",
		"read_secret": "false servers.fs.deny_tools[0] \"read_secret\"",
		"write_file":  "false servers.fs.tools (no glob matches)",
	} {
		ok, rule := ToolAllowed(s.ToolRules, s.DenyToolRules, name)
		if got := strings.TrimSpace(strings.Join([]string{map[bool]string{true: "true", false: "false"}[ok], rule}, " ")); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	for src, want := range map[string]string{
		"":                               PolicyAllow,
		"[policy]\ndeny = [\"a__b\"]\n":  PolicyAllow,
		"[policy]\nallow = [\"a__b\"]\n": PolicyDeny,
		"[policy]\ndefault = \"deny\"\n": PolicyDeny,
		"[policy]\ndefault = \"allow\"\nallow = [\"x\"]\n": PolicyAllow,
	} {
		cfg, err := Parse([]byte(src), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Policy.Default != want {
			t.Errorf("%q: default %q, want %q", src, cfg.Policy.Default, want)
		}
	}
}

func TestBestRule(t *testing.T) {
	var rules []Rule
	for i, p := range []string{"*", "fs__*", "fs__read_*", "fs__read_?ile", "{fs,db}__read_file"} {
		r, err := CompileRule("policy.allow", i, p)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	if b := Best(rules, "fs__read_file"); b == nil || b.Pattern != "fs__read_?ile" {
		t.Errorf("best %v, want the most literal characters", b)
	}
	if b := Best(rules, "db__x"); b == nil || b.Pattern != "*" {
		t.Errorf("best %v", b)
	}
	if n := literalChars(`{fs,db}__read_\*`); n != 8 {
		t.Errorf("literalChars %d", n)
	}
}
