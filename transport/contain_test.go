package transport_test

import (
	"context"
	"testing"
	"time"

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
