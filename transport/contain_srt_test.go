//go:build linux

package transport_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

var srtInstall sync.Mutex

// srtCLI returns the path of the pinned sandbox-runtime's CLI
// (testdata/srt, installed with npm ci when missing). srt runs its command
// in bubblewrap with socat proxies and uses ripgrep; when node or one of
// these is missing the test is skipped, or fails under CI (the CI variable
// set), where .ci/run installs them.
func srtCLI(t *testing.T) string {
	t.Helper()
	testutil.NeedNPM(t)
	var missing []string
	for _, p := range []string{"node", "npm", "bwrap", "socat", "rg"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		msg := "srt needs " + strings.Join(missing, ", ") + ": install Node.js and `apt-get install bubblewrap socat ripgrep` (.ci/run does)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := filepath.Join(testutil.Root(), "testdata", "srt")
	cli := filepath.Join(dir, "node_modules", "@anthropic-ai", "sandbox-runtime", "dist", "cli.js")
	// npm ci empties node_modules first: one install at a time, across
	// processes too (a second make test beside this one, the Makefile's
	// install), under flock(2) on the lock file, which npm ci only reads.
	srtInstall.Lock()
	defer srtInstall.Unlock()
	lock, err := os.Open(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(cli); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return cli
}

// freePIDRange returns the middle of the largest range of PIDs that
// /proc does not list, less 100.
func freePIDRange(t *testing.T) int {
	t.Helper()
	pidMax := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pidMax = n
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	used := []int{1, pidMax}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			used = append(used, pid)
		}
	}
	slices.Sort(used)
	best, start := 0, 2
	for i := 1; i < len(used); i++ {
		if gap := used[i] - used[i-1]; gap > best {
			best, start = gap, used[i-1]
		}
	}
	return max(2, start+best/2-100)
}

// TestStdioSrtWrappedServer: a stdio server wrapped in Anthropic's
// sandbox-runtime (srt, which runs it in bubblewrap: a PID namespace of its
// own with a fresh /proc, which bwrap mounts by opening /proc/PID/ns/ of
// getpid()) starts under toolhost and answers a call. Before each server
// got a /proc of its namespace, bwrap failed at start ("bwrap: open
// /proc/28738/ns/ns failed: No such file or directory", run as root). The
// settings allow no network and no writes.
func TestStdioSrtWrappedServer(t *testing.T) {
	cli := srtCLI(t)
	settings := filepath.Join(t.TempDir(), "srt-settings.json")
	if err := os.WriteFile(settings, []byte(`{"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"network":{"allowedDomains":[],"deniedDomains":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// bwrap opens /proc/<its child's PID>/ns: that PID must not name some
	// other process in a /proc of the wrong namespace. The server's
	// namespace hands out PIDs from the middle of the largest range free in
	// toolhost's /proc (ns_last_pid, writable by root), so that on the
	// unchanged code bwrap fails here as in the issue, where toolhost ran
	// in a container whose /proc shows few processes.
	last := freePIDRange(t)
	tr := transport.NewStdio(transport.Command{
		Path: "/bin/sh",
		Args: []string{"-c", `echo "$0" > /proc/sys/kernel/ns_last_pid 2>/dev/null || echo "ns_last_pid not set" >&2; exec "$@"`,
			strconv.Itoa(last), "node", cli, "--settings", settings, testutil.Fixture(t), "-proc"},
		InheritEnv: config.DefaultInheritEnv,
	}, &transport.StdioOptions{Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Debug}), TerminateGrace: 500 * time.Millisecond})
	defer tr.Close()
	// srt starts node, socat proxies and bwrap before the server: allow for
	// a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatalf("srt-wrapped server did not start (containment %s): %v", transport.Containment(), err)
	}
	res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through srt"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "through srt" {
		t.Fatalf("echo through srt: %+v", res.Content)
	}
	v := callProcView(t, tr)
	t.Logf("containment %s; the server inside srt sees pid %d, /proc/self -> %s, %d processes", transport.Containment(), v.Pid, v.Self, len(v.Listed))
}
