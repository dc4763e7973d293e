package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// pyFetchServer is a minimal MCP stdio server (newline-delimited JSON-RPC)
// with one tool, fetch {url}, that reads a URL with urllib (which honours
// HTTP_PROXY) and returns the body or the error; and env {name}.
const pyFetchServer = `import json, os, sys, urllib.request

def reply(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()

def text(s):
    return {"content": [{"type": "text", "text": s}]}

tool = lambda name, prop: {"name": name, "inputSchema": {"type": "object", "properties": {prop: {"type": "string"}}}}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m, p = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        reply(msg["id"], {"protocolVersion": p.get("protocolVersion"), "capabilities": {"tools": {}},
                          "serverInfo": {"name": "pyfetch", "version": "1"}})
    elif m == "tools/list":
        reply(msg["id"], {"tools": [tool("fetch", "url"), tool("env", "name")]})
    elif m == "tools/call":
        a = p.get("arguments") or {}
        if p.get("name") == "env":
            reply(msg["id"], text(os.environ.get(a["name"], "")))
            continue
        try:
            with urllib.request.urlopen(a["url"], timeout=10) as r:
                reply(msg["id"], text(r.read().decode()))
        except Exception as e:
            reply(msg["id"], text("error: %s" % e))
    else:
        reply(msg["id"], {})
`

// TestSandboxDenialsInStatus: a sandboxed server (a Python MCP server,
// through its proxy variables) reaches an allowed loopback host, is
// refused a host not in allowed_hosts, and Status counts the refusal and
// shows the last one; a server without allowed_hosts has no proxy and no
// network.
func TestSandboxDenialsInStatus(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 not found: the test's server is a Python script")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "allowed body") }))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fetch.py"), []byte(pyFetchServer), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	h := newHost(t, `
[servers.net]
command = "/usr/bin/python3"
args = ["/srv/fetch.py"]
sandbox = "strict"
allowed_paths = { "/srv" = "ro:`+dir+`" }
allowed_hosts = ["`+addr+`"]

[servers.nonet]
command = "/usr/bin/python3"
args = ["/srv/fetch.py"]
sandbox = "strict"
allowed_paths = { "/srv" = "ro:`+dir+`" }
`)
	ctx := context.Background()
	call := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := h.CallTool(ctx, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return text(t, res)
	}
	if got := call("net__env", map[string]any{"name": "HTTP_PROXY"}); got == "" {
		t.Fatal("the sandboxed server with allowed_hosts has no HTTP_PROXY")
	}
	if got := call("net__fetch", map[string]any{"url": srv.URL}); got != "allowed body" {
		t.Errorf("fetch of the allowed host %s: %q", srv.URL, got)
	}
	if st := statusOf(h, "net"); st.Denials != 0 {
		t.Errorf("denials %d after an allowed fetch", st.Denials)
	}
	if got := call("net__fetch", map[string]any{"url": "http://denied.example/"}); !strings.HasPrefix(got, "error:") {
		t.Errorf("fetch of a host not in allowed_hosts: %q, want an error", got)
	}
	var st host.BackendStatus
	testutil.Eventually(t, 5*time.Second, func() bool { st = statusOf(h, "net"); return st.Denials > 0 },
		func() string { return fmt.Sprintf("status: %d denials, last %q", st.Denials, st.LastDenial) })
	if !strings.Contains(st.LastDenial, "denied.example") || st.LastDenialAt.IsZero() {
		t.Errorf("last denial %q at %v, want it to name denied.example", st.LastDenial, st.LastDenialAt)
	}

	if got := call("nonet__env", map[string]any{"name": "HTTP_PROXY"}); got != "" {
		t.Errorf("a server without allowed_hosts has HTTP_PROXY=%q", got)
	}
	if got := call("nonet__fetch", map[string]any{"url": srv.URL}); !strings.HasPrefix(got, "error:") {
		t.Errorf("a server without allowed_hosts reached toolhost's loopback: %q", got)
	}
}
