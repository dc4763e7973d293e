package native_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// The reference servers the sandbox runs, pinned like
// testutil.EverythingPackage.
const (
	filesystemPackage = "@modelcontextprotocol/server-filesystem@2026.8.31"
	memoryPackage     = "@modelcontextprotocol/server-memory@2026.8.31"
)

// npmServer returns the Command that runs the program bin of the npm
// package pkg (pinned) from npx's cache: it installs pkg there if needed
// (npm exec --package, outside the sandbox, which may reach the registry
// once) and runs the installed bin (a #!/usr/bin/env node script) with
// args. Inside the sandbox the npm cache is mounted read-only, as the
// runtime set, and there is no network.
//
// Not npx itself: npx revalidates the package's metadata in the cache,
// and with the cache read-only that fails (cacache compacts the index
// bucket it reads, a write: ENOTCACHED with --offline; with
// --prefer-offline or neither it goes to the registry, which a server
// without allowed_hosts cannot reach, and waits about 70s for npm's
// retries). See docs/THREAT-MODEL.md.
func npmServer(t *testing.T, pkg, bin string, args ...string) transport.Command {
	t.Helper()
	testutil.NeedNpx(t)
	// Fetch the package into the npm cache outside the sandbox (inside, the
	// server has no network: npx runs offline from the cache).
	out, err := exec.Command("npm", "exec", "--yes", "--package="+pkg, "--", "sh", "-c", "command -v "+bin).CombinedOutput()
	if err != nil {
		t.Fatalf("npm exec --package=%s: %v\n%s", pkg, err, out)
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal(err)
	}
	return transport.Command{Path: npx, Args: append([]string{"-y", pkg}, args...), InheritEnv: inheritEnv}
}

// TestRealServerFilesystem: @modelcontextprotocol/server-filesystem,
// started by npx -y (offline, from its cache) inside a strict sandbox with its directory as /work,
// reads and writes there, refuses /etc/passwd by its own check, and
// cannot read a secret through a symbolic link in /work that points out
// (the link resolves inside the sandbox's root, where the secret is not).
func TestRealServerFilesystem(t *testing.T) {
	needStrict(t)
	cmd := npmServer(t, filesystemPackage, "mcp-server-filesystem", "/work")
	secret, content := hostileSecret(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("inside the mount"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	spec := native.Spec{Name: "files", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/work", Host: dir, Mode: sandbox.MountReadWrite},
	}}}
	tr, _ := sandboxed(t, &spec, cmd)
	if got := call(t, tr, "read_text_file", map[string]any{"path": "/work/notes.txt"}); got != "inside the mount" {
		t.Errorf("read_text_file /work/notes.txt: %q", got)
	}
	if got := call(t, tr, "write_file", map[string]any{"path": "/work/new.txt", "content": "from the server"}); strings.HasPrefix(got, "isError") {
		t.Errorf("write_file: %q", got)
	} else if b, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(b) != "from the server" {
		t.Errorf("the write on the host: %q, %v", b, err)
	}
	for _, p := range []string{"/etc/passwd", "/work/escape", "/work/../etc/passwd", secret} {
		got := call(t, tr, "read_text_file", map[string]any{"path": p})
		t.Logf("read_text_file %s: %q", p, got)
		if !strings.HasPrefix(got, "isError") || strings.Contains(got, content) || strings.Contains(got, "root:") {
			t.Errorf("ESCAPE: read_text_file %s = %q", p, got)
		}
	}
	if got := call(t, tr, "list_allowed_directories", nil); !strings.Contains(got, "/work") {
		t.Errorf("list_allowed_directories: %q", got)
	}
}

// TestRealServerMemory: @modelcontextprotocol/server-memory, started from
// npx's cache inside a strict sandbox, keeps its knowledge graph in the file its
// allowed path holds.
func TestRealServerMemory(t *testing.T) {
	needStrict(t)
	cmd := npmServer(t, memoryPackage, "mcp-server-memory")
	cmd.Env = map[string]string{"MEMORY_FILE_PATH": "/data/memory.jsonl"}
	dir := t.TempDir()
	spec := native.Spec{Name: "memory", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/data", Host: dir, Mode: sandbox.MountReadWrite},
	}}}
	tr, _ := sandboxed(t, &spec, cmd)
	got := call(t, tr, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "toolhost", "entityType": "project", "observations": []any{"runs servers sandboxed"}},
	}})
	if strings.HasPrefix(got, "isError") {
		t.Fatalf("create_entities: %q", got)
	}
	if got := call(t, tr, "search_nodes", map[string]any{"query": "sandboxed"}); !strings.Contains(got, "toolhost") {
		t.Errorf("search_nodes: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory.jsonl")); err != nil || !strings.Contains(string(b), "runs servers sandboxed") {
		t.Errorf("the graph on the host: %q, %v", b, err)
	}
}

// TestRealServerEverything: the reference server-everything, started from
// npx's cache inside a strict sandbox, lists and calls its tools.
func TestRealServerEverything(t *testing.T) {
	needStrict(t)
	cmd := npmServer(t, testutil.EverythingPackage, "mcp-server-everything", "stdio")
	tr, _ := sandboxed(t, &native.Spec{Name: "everything"}, cmd)
	tools, err := tr.ListTools(t.Context())
	if err != nil || len(tools) < 5 {
		t.Fatalf("ListTools: %d tools, %v", len(tools), err)
	}
	if got := call(t, tr, "echo", map[string]any{"message": "inside"}); !strings.Contains(got, "inside") {
		t.Errorf("echo: %q", got)
	}
	if got := call(t, tr, "get-sum", map[string]any{"a": 2, "b": 3}); !strings.Contains(got, "5") {
		t.Errorf("get-sum: %q", got)
	}
}

// TestRealServerGoFixture: the project's go-sdk fixture server runs
// inside a strict sandbox and answers.
func TestRealServerGoFixture(t *testing.T) {
	needStrict(t)
	tr, _ := sandboxed(t, &native.Spec{Name: "fixture"}, transport.Command{Path: testutil.Fixture(t), InheritEnv: inheritEnv})
	if got := call(t, tr, "echo", map[string]any{"text": "go inside"}); got != "go inside" {
		t.Errorf("echo: %q", got)
	}
}

// pyServer returns the Command that runs testdata/pyserver/server.py with
// the python3 of toolhost's PATH (a pyenv shim on a developer's machine),
// and the allowed path that shows the script at /srv/pyserver.
func pyServer(t *testing.T) (transport.Command, sandbox.Mount) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	dir := filepath.Join(testutil.Root(), "testdata", "pyserver")
	return transport.Command{Path: py, Args: []string{"/srv/pyserver/server.py"}, InheritEnv: inheritEnv},
		sandbox.Mount{Guest: "/srv/pyserver", Host: dir, Mode: sandbox.MountReadOnly}
}

// TestRealServerPython: the stdlib Python server runs inside a strict
// sandbox, answers, reads its own script and cannot read outside.
func TestRealServerPython(t *testing.T) {
	needStrict(t)
	cmd, mount := pyServer(t)
	secret, content := hostileSecret(t)
	spec := native.Spec{Name: "python", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{mount}}}
	tr, _ := sandboxed(t, &spec, cmd)
	if got := call(t, tr, "echo", map[string]any{"text": "python inside"}); got != "python inside" {
		t.Errorf("echo: %q", got)
	}
	if got := call(t, tr, "read", map[string]any{"path": "/srv/pyserver/server.py"}); !strings.Contains(got, "stdio MCP server") {
		t.Errorf("read its script: %q", got)
	}
	if got := call(t, tr, "read", map[string]any{"path": secret}); !strings.HasPrefix(got, "isError") || strings.Contains(got, content) {
		t.Errorf("ESCAPE: read %s = %q", secret, got)
	}
}

// egressHosts starts two loopback HTTP hosts and returns them: allowed
// (listed in allowed_hosts by its literal address) and denied.
func egressHosts(t *testing.T) (allowed, denied *httptest.Server) {
	t.Helper()
	allowed = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "allowed host") }))
	t.Cleanup(allowed.Close)
	denied = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "denied host") }))
	t.Cleanup(denied.Close)
	return allowed, denied
}

// TestRealServerFetch: servers that fetch a URL reach an allowed loopback
// host (listed literally in allowed_hosts) and not a denied one: the
// Python server's urllib (which honours http_proxy) and the hostile
// server's net/http (which does not use a proxy for loopback addresses,
// so it relies on the transparent forward).
func TestRealServerFetch(t *testing.T) {
	needStrict(t)
	allowed, denied := egressHosts(t)
	hosts := []string{strings.TrimPrefix(allowed.URL, "http://")}
	cmd, mount := pyServer(t)
	py, pl := sandboxed(t, &native.Spec{Name: "python", Capabilities: sandbox.Capabilities{Hosts: hosts, Mounts: []sandbox.Mount{mount}}}, cmd)
	hs, hl := sandboxed(t, &native.Spec{Name: "hostile", Capabilities: sandbox.Capabilities{Hosts: hosts}},
		transport.Command{Path: hostileBinary(t), InheritEnv: inheritEnv})
	for _, c := range []struct {
		name string
		tr   transport.Transport
		tool string
		l    *native.Launcher
	}{{"python", py, "fetch", pl}, {"hostile", hs, "http_get", hl}} {
		t.Run(c.name, func(t *testing.T) {
			if got := call(t, c.tr, c.tool, map[string]any{"url": allowed.URL + "/x"}); !strings.Contains(got, "200 allowed host") {
				t.Errorf("%s %s (allowed): %q", c.tool, allowed.URL, got)
			}
			for _, u := range []string{denied.URL + "/x", "http://169.254.169.254/latest/meta-data/", "http://denied.example/"} {
				got := call(t, c.tr, c.tool, map[string]any{"url": u})
				t.Logf("%s %s: %q", c.tool, u, got)
				if strings.Contains(got, "denied host") || strings.HasPrefix(got, "ok: 200") || strings.HasPrefix(got, "200 ") {
					t.Errorf("ESCAPE: %s %s = %q", c.tool, u, got)
				}
			}
			t.Logf("denials: %+v", c.l.Denials())
			if c.l.Denials().Count == 0 {
				t.Error("no denial counted for the refused hosts")
			}
		})
	}
}
