package main

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestKilledToolhostLeavesNoProcess: a toolhost process killed by SIGKILL
// (it cannot clean up) leaves none of the processes it started running:
// not its stdio server, nor the server's setsid() grandchild.
func TestKilledToolhostLeavesNoProcess(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cfg := writeConfig(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-mode", "spawn-setsid"]
`)
	cmd := exec.Command(bin, "--config", cfg, "status", "--watch", "1h")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// The status table is printed once the server is up.
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "fx ") {
	}
	pids := testutil.Descendants(cmd.Process.Pid)
	if len(pids) < 2 {
		t.Fatalf("toolhost's server and its grandchild are not running: %v", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	// Within 2s on a quiet machine; the bound is generous for a busy one.
	took := testutil.WaitGone(t, pids, 20*time.Second)
	t.Logf("%d processes gone %v after toolhost was killed", len(pids), took)
}
