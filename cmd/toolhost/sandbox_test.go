package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox/native"
)

// needSandbox skips t when this kernel cannot run the native sandbox in
// strict mode (Plan's reason is the skip message).
func needSandbox(t *testing.T) {
	t.Helper()
	spec := &native.Spec{Name: "probe", Mode: native.ModeStrict, Command: testutil.Fixture(t)}
	if _, err := spec.Plan(); err != nil {
		t.Skipf("the native sandbox cannot run here: %v", err)
	}
}

// TestCLICheckSandbox: toolhost check prints every stdio server's
// effective sandbox, computed without starting anything: the mode, the
// paths with their modes and why, the hosts, the limits with their
// mechanism, the mechanisms the kernel offered; "off" with the default
// containment for an unsandboxed server.
func TestCLICheckSandbox(t *testing.T) {
	needSandbox(t)
	work := t.TempDir()
	cfg := writeConfig(t, `
[servers.boxed]
command = "@FIXTURE@"
sandbox = "strict"
allowed_paths = { "/work" = "rw:`+work+`" }
allowed_hosts = ["example.com:443"]
memory = "256MiB"
pids = 64

[servers.loose]
command = "@FIXTURE@"
sandbox = "best-effort"

[servers.plain]
command = "@FIXTURE@"
`)
	code, stdout, stderr := runCLI("--config", cfg, "check")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"server boxed:\n  sandbox: strict\n",
		"  path /work rw " + work + " (allowed_paths)\n",
		"  path /usr ro /usr (runtime)\n",
		"  path /tmp rw (private)\n",
		"  hosts: example.com:443 (through toolhost's proxy at " + native.ProxyAddr + ")\n",
		"  memory: 256MiB (",
		"  pids: 64 (",
		"  mechanisms: user namespaces: yes, Landlock ABI ",
		"server loose:\n  sandbox: best-effort\n",
		"  hosts: none (a network namespace with only its own loopback)\n",
		"server plain: sandbox off (no native sandbox; the default containment: ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check's output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestCLICheckSandboxCannotRun: a sandbox the native sandbox refuses (an
// allowed path at a path of the runtime set, /usr) makes check fail
// with the reason, naming the server, before anything starts; the
// configuration's own errors (an allowed path that does not exist) come
// first, with their line and key.
func TestCLICheckSandboxCannotRun(t *testing.T) {
	cfg := writeConfig(t, `
[servers.boxed]
command = "@FIXTURE@"
sandbox = "strict"
allowed_paths = { "/usr" = "/usr" }
`)
	code, stdout, stderr := runCLI("--config", cfg, "check")
	if code != exitUsage || !strings.Contains(stdout, "server boxed: sandbox strict: CANNOT RUN") ||
		!strings.Contains(stderr, `toolhost: server boxed: sandbox = "strict": `+native.ErrSpec.Error()) || !strings.Contains(stderr, "the runtime set has this path") {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}

	missing := filepath.Join(t.TempDir(), "gone")
	cfg = writeConfig(t, `
[servers.boxed]
command = "@FIXTURE@"
sandbox = "strict"
allowed_paths = { "/data" = "ro:`+missing+`" }
`)
	code, _, stderr = runCLI("--config", cfg, "check")
	if code != exitUsage || !strings.Contains(stderr, `toolhost.toml:5: servers.boxed.allowed_paths."/data": `+missing+" does not exist") {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}

	cfg = writeConfig(t, `
[servers.plain]
command = "@FIXTURE@"
pids = 10
`)
	code, _, stderr = runCLI("--config", cfg, "check")
	if code != exitUsage || !strings.Contains(stderr, `toolhost.toml:4: servers.plain.pids: is not enforced without a sandbox`) {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
}

// TestCLIStatusSandbox: toolhost status shows each server's sandbox: the
// mode of a sandboxed one, "off" with the containment of another, "-"
// for a backend without one (--json: the fields).
func TestCLIStatusSandbox(t *testing.T) {
	needSandbox(t)
	cfg := writeConfig(t, `
[servers.boxed]
command = "@FIXTURE@"
sandbox = "strict"

[servers.plain]
command = "@FIXTURE@"

[servers.web]
url = "http://127.0.0.1:1/mcp"
max_restarts = 0
`)
	code, stdout, stderr := runCLI("--config", cfg, "status")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	lines := map[string][]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 3 {
			lines[f[0]] = f
		}
	}
	if f := lines["BACKEND"]; len(f) < 3 || f[2] != "SANDBOX" {
		t.Errorf("header %q: no SANDBOX column", f)
	}
	if f := lines["boxed"]; len(f) < 4 || f[2] != "strict" || f[3] != "ready" {
		t.Errorf("boxed: %q, want sandbox strict, ready", f)
	}
	if f := lines["plain"]; len(f) < 4 || f[2] != "off" || !strings.HasPrefix(f[3], "(") {
		t.Errorf("plain: %q, want sandbox off (containment)", f)
	}
	if f := lines["web"]; len(f) < 3 || f[2] != "-" {
		t.Errorf("web: %q, want no sandbox", f)
	}
	_, stdout, _ = runCLI("--config", cfg, "status", "--json")
	if !strings.Contains(stdout, `"sandbox": "strict"`) || !strings.Contains(stdout, `"sandbox_mechanisms": [`) || !strings.Contains(stdout, `"containment": "`) {
		t.Errorf("status --json lacks the sandbox fields:\n%s", stdout)
	}
}

// TestStatusDenials: a backend whose sandbox refused something gets a
// line under the table with the count and the last refusal, its control
// characters escaped.
func TestStatusDenials(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 11, 26, 23, 4, 5, 0, time.Local)
	printStatus(&b, []host.BackendStatus{
		{Name: "boxed", Kind: host.KindStdio, State: host.StateReady, Sandbox: "strict", Denials: 3,
			LastDenial: "egress to 169.254.169.254:80 denied: not in allowed_hosts\x1b[2K", LastDenialAt: at},
		{Name: "calm", Kind: host.KindStdio, State: host.StateReady, Sandbox: "best-effort (missing: seccomp)"},
	})
	out := b.String()
	if !strings.Contains(out, "boxed: 3 denied by its sandbox; last at 23:04:05: egress to 169.254.169.254:80 denied: not in allowed_hosts") ||
		strings.Contains(out, "\x1b") || strings.Contains(out, "calm: ") {
		t.Errorf("status:\n%q", out)
	}
	if !strings.Contains(out, "best-effort (missing: seccomp)") {
		t.Errorf("status lacks best-effort's missing mechanisms:\n%s", out)
	}
}

// TestReadmeSandboxConfig: the README's example of a sandboxed server
// loads, with the effective sandbox it describes.
func TestReadmeSandboxConfig(t *testing.T) {
	src := block(t, mdBlocks(t, filepath.Join(testutil.Root(), "README.md")), "Isolating native servers", "toml", 0)
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "README.md", Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("the README's sandbox example does not load:\n%v", err)
	}
	s := cfg.Servers["files"]
	if s.Sandbox != config.SandboxStrict || len(s.Mounts) != 1 || !s.Mounts[0].ReadWrite || s.Pids != 128 || s.Memory != 512<<20 {
		t.Errorf("files: %+v", s)
	}
}
