package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// TestRESTReadme runs the README's "REST API" example as an operator
// would: its [serve.clients.ops] table (with a jq plugin) in a real
// `toolhost serve --listen`, and its curl commands against it.
func TestRESTReadme(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	toml := block(t, blocks, "REST API", "toml", 0)
	script := block(t, blocks, "REST API", "sh", 0)
	jq := wasmbuild.Build(t, filepath.Join(testutil.Root(), "plugins"), "./jq")
	cfg := writeConfig(t, "[plugins.jq]\npath = \""+jq+"\"\n\n"+toml)
	const token = "ops-token-0123456789abcdef"

	url := testutil.ServeHTTP(t, testutil.GoBinary(t, "./cmd/toolhost"), cfg, "TOOLHOST_OPS_TOKEN="+token)
	if !strings.Contains(script, "URL=http://127.0.0.1:8808") {
		t.Fatalf("the README's script changed:\n%s", script)
	}
	script = strings.Replace(script, "URL=http://127.0.0.1:8808", "URL="+url, 1)
	// Each command's output on a line of its own.
	script = strings.ReplaceAll(script, "curl -s ", "echo; "+curl+" -sS ")
	sh := exec.Command("sh", "-ec", script)
	sh.Env = append(os.Environ(), "TOOLHOST_OPS_TOKEN="+token)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands: %v\n%s", err, out)
	}
	for _, want := range []string{`"type":"function"`, `"name":"jq__jq"`, `"success":true`, `"tool":"jq__jq","enabled":false`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands printed no %s:\n%s", want, out)
		}
	}
}
