package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// TestStdioLargeResult: a result over max_output is ErrOutputTooLarge and
// the server stays up (the line is discarded as it streams, never buffered
// whole, so a line over the old 16 MiB limit is no protocol violation); a
// max_output above 16 MiB lets a 20 MB result through.
func TestStdioLargeResult(t *testing.T) {
	h, _ := policyHost(t, `
[servers.small]
command = "@FIXTURE@"
max_output = "1MiB"

[servers.large]
command = "@FIXTURE@"
max_output = "64MiB"
timeout = "2m"
`, nil)
	ctx := context.Background()
	pid := h.Status()[1].Pid
	for _, n := range []int{2 << 20, 20 << 20} {
		_, err := h.CallTool(ctx, "small__big", map[string]any{"bytes": n})
		if !errors.Is(err, host.ErrOutputTooLarge) {
			t.Fatalf("a %d-byte result over max_output 1MiB: %v, want ErrOutputTooLarge", n, err)
		}
	}
	if _, err := h.CallTool(ctx, "small__echo", map[string]any{"text": "still up"}); err != nil {
		t.Fatalf("after the oversized results: %v", err)
	}
	st := h.Status()[1]
	if st.Name != "small" || st.State != host.StateReady || st.Restarts != 0 || st.Pid != pid {
		t.Errorf("small after oversized results: %+v, want ready, same process, 0 restarts", st)
	}
	res, err := h.CallTool(ctx, "large__big", map[string]any{"bytes": 20_000_000})
	if err != nil {
		t.Fatalf("a 20 MB result with max_output 64MiB: %v", err)
	}
	if got := len(text(t, res)); got != 20_000_000 {
		t.Errorf("result of %d bytes, want 20000000", got)
	}
	if !strings.Contains(h.Status()[0].Name, "large") || h.Status()[0].Restarts != 0 {
		t.Errorf("large: %+v", h.Status()[0])
	}
}

// TestStdoutBanner: a stdio server that prints a banner that is not JSON on
// stdout (as the npm time-mcp does) is served, the line skipped, logged at
// Warn quoted, and counted in Status; strict_stdout = true keeps the spec's
// rule (a protocol violation).
func TestStdoutBanner(t *testing.T) {
	h, logs := policyHost(t, `
[servers.banner]
command = "@FIXTURE@"
args = ["-mode", "garbage"]

[servers.strict]
command = "@FIXTURE@"
args = ["-mode", "garbage"]
strict_stdout = true
max_restarts = 0
`, nil)
	res, err := h.CallTool(context.Background(), "banner__echo", map[string]any{"text": "hi"})
	if err != nil || text(t, res) != "hi" {
		t.Fatalf("server with a banner: %v", err)
	}
	st := h.Status()
	if st[0].State != host.StateReady || st[0].Restarts != 0 || st[0].StdoutSkipped != 1 {
		t.Errorf("banner: %+v, want ready, 0 restarts, 1 skipped line", st[0])
	}
	if !strings.Contains(logs.String(), `Server ready! (this banner is not JSON-RPC)`) {
		t.Errorf("the skipped line is not logged")
	}
	if st[1].State != host.StateFailed || !strings.Contains(st[1].LastError, "not a JSON-RPC message") {
		t.Errorf("strict: %+v, want failed with the protocol violation", st[1])
	}
}
