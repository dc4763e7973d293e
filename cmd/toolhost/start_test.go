package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/sandbox"
)

// startConfig has the fixture server and a second one, started through a
// shell that first leaves a marker file: the marker tells whether toolhost
// started the second backend.
func startConfig(t *testing.T) (cfg, marker string) {
	t.Helper()
	marker = filepath.Join(t.TempDir(), "second-started")
	cfg = writeConfig(t, `
[servers.fixture]
command = "@FIXTURE@"

[servers.second]
command = "/bin/sh"
args = ["-c", ": > \"$0\"; exec \"$1\"", "`+marker+`", "@FIXTURE@"]

[profiles.needs]
requires = ["second"]
`)
	return cfg, marker
}

func started(marker string) bool {
	_, err := os.Stat(marker)
	return err == nil
}

// TestCLICallStartsOnlyItsBackend: toolhost call NAME starts the backend
// that owns NAME (and those the profile requires), not the others; an
// unknown tool starts them all so that its suggestions come from the whole
// catalogue; tools starts every backend.
func TestCLICallStartsOnlyItsBackend(t *testing.T) {
	t.Run("owner only", func(t *testing.T) {
		cfg, marker := startConfig(t)
		code, stdout, stderr := runCLI("--config", cfg, "call", "fixture__echo", "--args", `{"text":"only me"}`)
		if code != exitOK || !strings.Contains(stdout, "only me") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if started(marker) {
			t.Error("calling fixture__echo started the backend second")
		}
	})
	t.Run("the other owner", func(t *testing.T) {
		cfg, marker := startConfig(t)
		code, stdout, stderr := runCLI("--config", cfg, "call", "second__echo", "--args", `{"text":"second"}`)
		if code != exitOK || !strings.Contains(stdout, "second") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !started(marker) {
			t.Error("calling second__echo did not start second")
		}
	})
	t.Run("profile requires", func(t *testing.T) {
		cfg, marker := startConfig(t)
		code, stdout, stderr := runCLI("--config", cfg, "call", "--profile", "needs", "fixture__echo", "--args", `{"text":"required"}`)
		if code != exitOK || !strings.Contains(stdout, "required") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !started(marker) {
			t.Error("a call through a profile that requires second did not start second")
		}
	})
	t.Run("unknown tool suggests from every backend", func(t *testing.T) {
		cfg, marker := startConfig(t)
		code, stdout, stderr := runCLI("--config", cfg, "call", "fixture__ech")
		if code != exitCallError || stdout != "" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, `unknown tool "fixture__ech"; did you mean fixture__echo, second__echo?`) {
			t.Errorf("the suggestions do not come from the whole catalogue:\n%s", stderr)
		}
		if !started(marker) {
			t.Error("an unknown tool did not start every backend")
		}
	})
	t.Run("unknown prefix", func(t *testing.T) {
		cfg, marker := startConfig(t)
		if code, _, stderr := runCLI("--config", cfg, "call", "nope__echo"); code != exitCallError || !strings.Contains(stderr, `unknown tool "nope__echo"`) {
			t.Fatalf("exit %d\nstderr: %s", code, stderr)
		}
		if !started(marker) {
			t.Error("a name no backend owns did not start every backend")
		}
	})
	t.Run("tools", func(t *testing.T) {
		cfg, marker := startConfig(t)
		if code, stdout, stderr := runCLI("--config", cfg, "tools"); code != exitOK || !strings.Contains(stdout, "second__echo") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !started(marker) {
			t.Error("tools did not start every backend")
		}
	})
}

// TestCLIPrewarm: prewarm compiles every plugin and fills the tool-list
// cache without starting servers; tools then lists the plugin from that
// cache (nothing compiled); a plugin that cannot load fails prewarm with
// exit status 3.
func TestCLIPrewarm(t *testing.T) {
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	cache := t.TempDir()
	marker := filepath.Join(t.TempDir(), "server-started")
	body := `
[host]
cache_dir = "` + cache + `"

[servers.second]
command = "/bin/sh"
args = ["-c", ": > \"$0\"; exec \"$1\"", "` + marker + `", "@FIXTURE@"]

[plugins.echo]
path = "` + wasm + `"
`
	cfg := writeConfig(t, body)
	code, stdout, stderr := runCLI("--config", cfg, "prewarm")
	if code != exitOK || !strings.Contains(stdout, "echo: compiled and listed in ") || !strings.Contains(stdout, "1 of 1 plugins prewarmed") {
		t.Fatalf("prewarm: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if started(marker) {
		t.Error("prewarm started a server")
	}
	entries, err := filepath.Glob(filepath.Join(cache, sandbox.ToolCacheDir, "*.json"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("tool-list cache entries after prewarm: %q %v", entries, err)
	}
	code, stdout, stderr = runCLI("--config", cfg, "--log-level", "debug", "tools")
	if code != exitOK || !strings.Contains(stdout, "echo__echo") {
		t.Fatalf("tools: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "tools from the tool-list cache") || strings.Contains(stderr, "compiled at first use") {
		t.Errorf("tools after prewarm did not list the plugin from the cache without compiling:\n%s", stderr)
	}

	broken := writeConfig(t, body+"\n[plugins.gone]\npath = \""+filepath.Join(t.TempDir(), "gone.wasm")+"\"\n")
	code, stdout, stderr = runCLI("--config", broken, "prewarm")
	if code != exitCallError || !strings.Contains(stderr, "toolhost: prewarm gone:") || !strings.Contains(stdout, "1 of 2 plugins prewarmed") {
		t.Errorf("prewarm with a missing plugin: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
