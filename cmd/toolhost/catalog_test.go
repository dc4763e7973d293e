package main

import (
	"strings"
	"testing"
)

// TestPromptsAndResourcesCLI: the prompts, prompt, resources and read
// commands, with the policy and a profile applied to each.
func TestPromptsAndResourcesCLI(t *testing.T) {
	cfg := writeConfig(t, `
[servers.fixture]
command = "@FIXTURE@"
startup_timeout = "5m"

[policy]
deny_prompts = ["fixture__nothing"]

[profiles.closed]
prompts   = ["none__*"]
resources = ["none:**"]
`)
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"prompts", []string{"prompts"}, 0, "fixture__greeting  fixture  name", ""},
		{"prompt", []string{"prompt", "fixture__greeting", "--args", `{"name":"Ada"}`}, 0, "user: Hello, Ada!", ""},
		{"prompt json", []string{"prompt", "fixture__greeting", "--json", "--args", `{"name":"Ada"}`}, 0, `"role": "user"`, ""},
		{"prompt bad args", []string{"prompt", "fixture__greeting", "--args", `{"name":1}`}, 2, "", "--args must be a JSON object of strings"},
		{"prompt unknown", []string{"prompt", "fixture__nope"}, 3, "", `prompts/get failed: prompt "fixture__nope": unknown tool`},
		{"resources", []string{"resources"}, 0, "fixture://readme  fixture  text/plain  readme", ""},
		{"read", []string{"read", "fixture://readme"}, 0, "fixture readme", ""},
		{"read backend", []string{"read", "--backend", "fixture", "fixture://readme"}, 0, "fixture readme", ""},
		{"read unlisted", []string{"read", "fixture://other"}, 3, "", `no backend lists resource "fixture://other"`},
		{"profile prompts", []string{"prompts", "--profile", "closed"}, 0, "NAME", ""},
		{"profile prompt denied", []string{"prompt", "--profile", "closed", "fixture__greeting", "--args", `{"name":"x"}`}, 4, "",
			`prompts/get denied: prompt "fixture__greeting" is not allowed in profile "closed" (rule profiles.closed.prompts (no glob matches))`},
		{"profile read denied", []string{"read", "--profile", "closed", "--backend", "fixture", "fixture://readme"}, 4, "",
			`resources/read denied: resource "fixture://readme" of backend "fixture" is not allowed in profile "closed" (rule profiles.closed.resources (no glob matches))`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"--config", cfg}, tc.args...)...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant stdout containing %q and stderr containing %q", code, tc.code, stdout, stderr, tc.stdout, tc.stderr)
			}
		})
	}
	// The closed profile lists nothing.
	if _, stdout, _ := runCLI("--config", cfg, "resources", "--profile", "closed"); strings.Contains(stdout, "fixture://") {
		t.Errorf("profile closed lists resources:\n%s", stdout)
	}
}
