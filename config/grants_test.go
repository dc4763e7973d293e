package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

func TestGrantConfig(t *testing.T) {
	src := `
[policy]
require_grant = ["github__delete_*", "*__drop_*"]

[tools.github__delete_repo]
grant = "ask"
ask_timeout = "2m"

[tools.github__delete_issue]
grant = "required"

[tools.fs__read_file]
retry = true
`
	cfg, err := config.Parse([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"github__delete_repo":  config.GrantAsk,
		"github__delete_issue": config.GrantRequired,
		"github__delete_gist":  config.GrantRequired, // require_grant
		"db__drop_table":       config.GrantRequired,
		"fs__read_file":        "",
		"github__create_issue": "",
	} {
		if got := cfg.GrantMode(name); got != want {
			t.Errorf("GrantMode(%s) = %q, want %q", name, got, want)
		}
	}
	if !cfg.NeedsGrants() || cfg.Tools["github__delete_repo"].AskTimeout.Std().Minutes() != 2 {
		t.Fatalf("NeedsGrants %v, ask_timeout %s", cfg.NeedsGrants(), cfg.Tools["github__delete_repo"].AskTimeout)
	}
	plain, err := config.Parse([]byte("[tools.x__y]\nretry = true\n"), nil)
	if err != nil || plain.NeedsGrants() {
		t.Fatalf("a config without grants: NeedsGrants %v %v", plain.NeedsGrants(), err)
	}
}

func TestGrantConfigErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[tools.x__y]\ngrant = \"always\"\n", `line 2: tools.x__y.grant: "always" is not a grant mode`},
		{"[tools.x__y]\ngrant = \"required\"\nask_timeout = \"5s\"\n", `line 3: tools.x__y.ask_timeout: is only used with grant = "ask"`},
		{"[tools.x__y]\ngrant = \"ask\"\nask_timeout = \"0s\"\n", `line 3: tools.x__y.ask_timeout: must be greater than 0`},
		{"[policy]\nrequire_grant = [\"fs/*\"]\n", `line 2: policy.require_grant: element 1 "fs/*": character '/' is never in a tool name`},
		{"[policy]\nrequire_grant = [\"x__[\"]\n", `line 2: policy.require_grant: element 1`},
		{"[tools.x__y]\ngrant = 1\n", `tools.x__y.grant`},
	} {
		_, err := config.Parse([]byte(c.src), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
