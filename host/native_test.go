package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// TestServerSandboxSpec: ServerSandbox maps every sandbox key of a
// [servers.NAME] table to the native Spec, with the command resolved as
// the transport resolves it and the scrubbed environment the server gets;
// a server whose effective sandbox is off has none.
func TestServerSandboxSpec(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TOOLHOST_TEST_INHERITED", "yes")
	t.Setenv("TOOLHOST_TEST_SECRET", "not for the server")
	src := `
[host]
sandbox = "best-effort"

[servers.files]
command = "sh"
args = ["-c", "true"]
sandbox = "strict"
inherit_env = ["TOOLHOST_TEST_INHERITED", "TOOLHOST_TEST_UNSET"]
env = { B = "2", A = "1" }
cwd = "work"
allowed_paths = { "/work" = "rw:./work", "/docs" = "/usr/share" }
allowed_hosts = ["Example.com:443", "127.0.0.1:8081"]
memory = "64MiB"
pids = 32

[servers.rel]
command = "./bin/server"

[servers.off]
command = "sh"
sandbox = "off"

[servers.web]
url = "http://127.0.0.1:1/mcp"
`
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "test.toml", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	spec, ok, err := host.ServerSandbox(cfg, "files")
	if err != nil || !ok {
		t.Fatalf("ServerSandbox(files) = %v, %v", ok, err)
	}
	sh, _ := exec.LookPath("sh")
	want := &native.Spec{
		Name: "files",
		Mode: native.ModeStrict,
		Capabilities: sandbox.Capabilities{
			Hosts: []string{"example.com:443", "127.0.0.1:8081"},
			Mounts: []sandbox.Mount{
				{Host: "/usr/share", Guest: "/docs", Mode: sandbox.MountReadOnly},
				{Host: filepath.Join(dir, "work"), Guest: "/work", Mode: sandbox.MountReadWrite},
			},
			Memory: 64 << 20,
		},
		Pids:    32,
		Command: sh,
		Env:     []string{"TOOLHOST_TEST_INHERITED=yes", "A=1", "B=2"},
		Dir:     filepath.Join(dir, "work"),
	}
	if got, w := fmt.Sprintf("%+v", *spec), fmt.Sprintf("%+v", *want); got != w {
		t.Errorf("spec:\n got %s\nwant %s", got, w)
	}

	// [host] sandbox applies; a relative command is relative to the
	// configuration file (as the host starts it).
	spec, ok, err = host.ServerSandbox(cfg, "rel")
	if err != nil || !ok || spec.Mode != native.ModeBestEffort || spec.Command != filepath.Join(dir, "bin/server") {
		t.Errorf("ServerSandbox(rel) = %+v, %v, %v", spec, ok, err)
	}
	if slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "TOOLHOST_TEST_SECRET=") }) {
		t.Errorf("the default inherit_env passed a variable it does not name: %q", spec.Env)
	}
	if spec, ok, err := host.ServerSandbox(cfg, "off"); spec != nil || ok || err != nil {
		t.Errorf("ServerSandbox(off) = %+v, %v, %v; want no sandbox", spec, ok, err)
	}
	for _, name := range []string{"web", "nosuch"} {
		if _, _, err := host.ServerSandbox(cfg, name); !errors.Is(err, host.ErrUnknownBackend) {
			t.Errorf("ServerSandbox(%s): %v, want ErrUnknownBackend", name, err)
		}
	}
	cfg.Servers["off"].Command, cfg.Servers["off"].Sandbox = "toolhost-no-such-program", "strict"
	if _, _, err := host.ServerSandbox(cfg, "off"); !errors.Is(err, exec.ErrNotFound) || !errors.Is(err, transport.ErrStart) {
		t.Errorf("ServerSandbox with a missing command: %v, want exec.ErrNotFound and transport.ErrStart", err)
	}
}

// needSandbox skips t when this kernel cannot run the native sandbox in
// strict mode (the reason from Plan is the skip message).
func needSandbox(t *testing.T) {
	t.Helper()
	spec := &native.Spec{Name: "probe", Mode: native.ModeStrict, Command: testutil.Fixture(t)}
	if _, err := spec.Plan(); err != nil {
		t.Skipf("the native sandbox cannot run here: %v", err)
	}
}

// TestSandboxedServerRuns: a stdio server with sandbox = "strict" is
// started through its native Launcher (one for the backend, kept across
// restarts) in namespaces of its own and serves calls; an unsandboxed
// server beside it is not; Status tells them apart.
func TestSandboxedServerRuns(t *testing.T) {
	needSandbox(t)
	h := newHost(t, `
[servers.boxed]
command = "@FIXTURE@"
sandbox = "strict"
memory = "256MiB"
pids = 64

[servers.plain]
command = "@FIXTURE@"
`)
	ctx := context.Background()
	for _, name := range []string{"boxed", "plain"} {
		res, err := h.CallTool(ctx, name+"__echo", map[string]any{"text": "hi " + name})
		if err != nil || text(t, res) != "hi "+name {
			t.Fatalf("%s__echo: %v, %v", name, res, err)
		}
	}
	l := host.SandboxLauncher(h, "boxed")
	if l == nil {
		t.Fatal("the sandboxed server has no native Launcher")
	}
	if host.SandboxLauncher(h, "plain") != nil {
		t.Error("the unsandboxed server has a native Launcher")
	}
	if p := l.Plan(); p.Spec.Mode != native.ModeStrict || p.Memory != 256<<20 || p.Pids != 64 {
		t.Errorf("plan: mode %s, memory %d, pids %d", p.Spec.Mode, p.Memory, p.Pids)
	}

	// The sandboxed server's process is in namespaces of its own (user,
	// network, mount); the plain one shares toolhost's network.
	boxed, plain := statusOf(h, "boxed"), statusOf(h, "plain")
	for _, ns := range []string{"user", "net", "mnt"} {
		self, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", boxed.Pid, ns)); err != nil || got == self {
			t.Errorf("the sandboxed server (pid %d) is in toolhost's %s namespace (%s, %v)", boxed.Pid, ns, got, err)
		}
	}
	if self, _ := os.Readlink("/proc/self/ns/net"); self != "" {
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", plain.Pid)); got != self {
			t.Errorf("the plain server is not in toolhost's network namespace (%s, toolhost's %s)", got, self)
		}
	}

	if boxed.Sandbox != "strict" || len(boxed.SandboxMechanisms) == 0 || boxed.Containment != "" {
		t.Errorf("status of the sandboxed server: sandbox %q, mechanisms %q, containment %q", boxed.Sandbox, boxed.SandboxMechanisms, boxed.Containment)
	}
	if plain.Sandbox != "off" || plain.Containment == "" || plain.SandboxMechanisms != nil {
		t.Errorf("status of the plain server: sandbox %q, containment %q, mechanisms %q", plain.Sandbox, plain.Containment, plain.SandboxMechanisms)
	}

	// A restart keeps the Launcher (its denials count across restarts).
	if err := h.Restart(ctx, "boxed"); err != nil {
		t.Fatal(err)
	}
	if res, err := h.CallTool(ctx, "boxed__echo", map[string]any{"text": "again"}); err != nil || text(t, res) != "again" {
		t.Fatalf("boxed__echo after a restart: %v, %v", res, err)
	}
	if host.SandboxLauncher(h, "boxed") != l {
		t.Error("a restart made a new Launcher")
	}
}

// TestSandboxPlanFailureKeepsOthers: a strict server whose sandbox cannot
// be set up (a kernel without a mechanism, an allowed path that does not
// exist) fails at once, not restarted, with the reason; every other
// backend keeps serving.
func TestSandboxPlanFailureKeepsOthers(t *testing.T) {
	restore := host.SetPlanSpec(func(s *native.Spec) (*native.Plan, error) {
		switch s.Name {
		case "nokernel":
			return nil, fmt.Errorf("%w: server %q: sandbox = \"strict\" needs seccomp, which this kernel does not offer", native.ErrUnavailable, s.Name)
		case "nousers":
			return nil, fmt.Errorf("%w: server %q: user namespaces are not offered", native.ErrUnavailable, s.Name)
		}
		return s.Plan()
	})
	t.Cleanup(restore)
	missing := filepath.Join(t.TempDir(), "gone")
	h := newHost(t, `
[servers.nokernel]
command = "@FIXTURE@"
sandbox = "strict"

[servers.nousers]
command = "@FIXTURE@"
sandbox = "best-effort"

[servers.nodir]
command = "@FIXTURE@"
sandbox = "strict"
allowed_paths = { "/data" = "`+missing+`" }

[servers.nocommand]
command = "toolhost-no-such-program"
sandbox = "strict"
max_restarts = 0

[servers.plain]
command = "@FIXTURE@"
`)
	statusSandbox := map[string]string{"nokernel": "strict", "nousers": "best-effort", "nodir": "strict"}
	for _, c := range []struct {
		name string
		is   error
		msg  string
	}{
		{"nokernel", native.ErrUnavailable, `set sandbox = "best-effort"`},
		{"nousers", native.ErrUnavailable, "every native sandbox needs"},
		{"nodir", native.ErrSpec, "allowed_paths"},
	} {
		st := waitState(t, h, c.name, host.StateFailed)
		if !errors.Is(st.Err, c.is) || !errors.Is(st.Err, transport.ErrPermanent) || !errors.Is(st.Err, transport.ErrStart) {
			t.Errorf("%s: error %v, want %v, transport.ErrPermanent and transport.ErrStart", c.name, st.Err, c.is)
		}
		if !strings.Contains(st.LastError, c.msg) || st.Restarts != 0 {
			t.Errorf("%s: last error %q (want it to say %q), %d restarts (want 0)", c.name, st.LastError, c.msg, st.Restarts)
		}
		if want := statusSandbox[c.name]; st.Sandbox != want {
			t.Errorf("%s: status sandbox %q, want %q", c.name, st.Sandbox, want)
		}
		if host.SandboxLauncher(h, c.name) != nil {
			t.Errorf("%s: a Launcher was made for a sandbox that failed", c.name)
		}
	}
	// A command not found is an ordinary start failure (it may be
	// installed later): retried per max_restarts, not permanent.
	st := waitState(t, h, "nocommand", host.StateFailed)
	if !errors.Is(st.Err, transport.ErrStart) || errors.Is(st.Err, transport.ErrPermanent) {
		t.Errorf("nocommand: %v, want transport.ErrStart, not permanent", st.Err)
	}
	res, err := h.CallTool(context.Background(), "plain__echo", map[string]any{"text": "still here"})
	if err != nil || text(t, res) != "still here" {
		t.Fatalf("plain__echo beside failed sandboxes: %v, %v", res, err)
	}
	if _, err := h.CallTool(context.Background(), "nokernel__echo", map[string]any{"text": "x"}); err == nil {
		t.Error("a call to the failed sandboxed server succeeded")
	}
}

// TestApplySandbox: Host.Apply with [host] sandbox turned on restarts
// the stdio servers that inherit it, now through a native Launcher, and
// leaves a server that says sandbox = "off" alone.
func TestApplySandbox(t *testing.T) {
	needSandbox(t)
	fixture := testutil.Fixture(t)
	src := `
[host]
sandbox = "%s"

[servers.a]
command = "` + fixture + `"

[servers.keep]
command = "` + fixture + `"
sandbox = "off"
`
	parse := func(mode string) *config.Config {
		cfg, err := config.Parse([]byte(fmt.Sprintf(src, mode)), &config.Options{Name: "test.toml"})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	h, err := host.New(context.Background(), parse("off"), &host.Options{TerminateGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if host.SandboxLauncher(h, "a") != nil {
		t.Fatal("a has a Launcher with [host] sandbox = \"off\"")
	}
	rep, err := h.Apply(context.Background(), parse("strict"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{"a"}) || !slices.Equal(rep.Unchanged, []string{"keep"}) {
		t.Errorf("Apply: changed %q, unchanged %q; want a changed, keep unchanged", rep.Changed, rep.Unchanged)
	}
	res, err := h.CallTool(context.Background(), "a__echo", map[string]any{"text": "boxed"})
	if err != nil || resultString(res) != "boxed" {
		t.Fatalf("a__echo after Apply: %v, %v", res, err)
	}
	if host.SandboxLauncher(h, "a") == nil || statusOf(h, "a").Sandbox != "strict" {
		t.Errorf("after Apply: a's Launcher %v, sandbox %q", host.SandboxLauncher(h, "a"), statusOf(h, "a").Sandbox)
	}
}
