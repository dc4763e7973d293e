package transport_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// TestStdioCloseKillsSetsidGrandchild: a grandchild that left the server's
// process group with setsid() is gone after Close too.
func TestStdioCloseKillsSetsidGrandchild(t *testing.T) {
	tr := fixtureStdio(t, "-mode=spawn-setsid")
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	pids := append([]int{tr.Pid()}, testutil.Descendants(tr.Pid())...)
	if len(pids) < 2 {
		t.Fatalf("the fixture's grandchild is not running: %v", pids)
	}
	if err := tr.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// Close returns once the server is reaped; its namespace went with it.
	took := testutil.WaitGone(t, pids, 10*time.Second)
	t.Logf("containment %s; all gone %v after Close returned", transport.Containment(), took)
}

// procView is the fixture's proc_view result (testdata/mcpfixture/proc.go).
type procView struct {
	Pid         int      `json:"pid"`
	Self        string   `json:"self"`
	Init        []string `json:"init"`
	Args        []string `json:"args"`
	Listed      []int    `json:"listed"`
	ListedNames []string `json:"listedNames"`
	CapEff      string   `json:"capEff"`
	CapAmb      string   `json:"capAmb"`
	Error       string   `json:"error"`
}

func callProcView(t *testing.T, tr transport.Transport) procView {
	t.Helper()
	res, err := tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "proc_view", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var v procView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("proc_view: %v: %s", err, b)
	}
	if v.Error != "" {
		t.Errorf("proc_view: %s", v.Error)
	}
	return v
}

// TestStdioProcMatchesPIDNamespace: a stdio server, PID 1 of its PID
// namespace, sees a /proc of that namespace: /proc/self is "1", /proc/1 is
// its own command line, and /proc lists no process outside the namespace
// (issue 20, item 4). Where the mount namespace or the procfs mount is
// refused, Containment says so ("-shared-proc") and the test is skipped.
func TestStdioProcMatchesPIDNamespace(t *testing.T) {
	tr := fixtureStdio(t, "-proc")
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	level := transport.Containment()
	switch {
	case level == "death-signal", level == "process-group":
		t.Skipf("containment %s: no PID namespace on this machine", level)
	case strings.HasSuffix(level, "-shared-proc"):
		t.Skipf("containment %s: a mount namespace or a procfs mount is refused here, so the server sees toolhost's /proc", level)
	}
	v := callProcView(t, tr)
	t.Logf("containment %s; server sees %+v", level, v)
	checkOwnProc(t, v)
}

// checkOwnProc fails t unless v shows a /proc of the server's own PID
// namespace, and no ambient capability left by the shim.
func checkOwnProc(t *testing.T, v procView) {
	t.Helper()
	if v.Pid != 1 {
		t.Errorf("getpid() = %d in the server, want 1 (PID 1 of its namespace)", v.Pid)
	}
	if v.Self != strconv.Itoa(v.Pid) {
		t.Errorf("/proc/self -> %q, want %q (getpid()): /proc is not its namespace's", v.Self, strconv.Itoa(v.Pid))
	}
	if strings.Join(v.Init, "\x00") != strings.Join(v.Args, "\x00") {
		t.Errorf("/proc/1/cmdline = %q, want the server's own %q", v.Init, v.Args)
	}
	if len(v.Listed) != 1 || v.Listed[0] != 1 {
		names := v.ListedNames
		if len(names) > 12 {
			names = append(names[:12:12], "...")
		}
		t.Errorf("/proc lists %d PIDs (%v), want only [1]: processes outside the namespace are visible", len(v.Listed), names)
	}
	if strings.Trim(v.CapAmb, "0") != "" {
		t.Errorf("the server's ambient capabilities are %s, want none", v.CapAmb)
	}
}
