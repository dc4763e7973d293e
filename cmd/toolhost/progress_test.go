package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/toolhost/toolhost/host"
)

func TestRenderProgress(t *testing.T) {
	for _, c := range []struct {
		p    host.Progress
		want string
	}{
		{host.Progress{Progress: 5, Total: 10, Message: "half\x1b[2J"}, "[#####-----]  50% 5/10 half[2J"},
		{host.Progress{Progress: 12, Total: 10}, "[##########] 100% 12/10"},
		{host.Progress{Progress: 3, Message: "files"}, "3 files"},
	} {
		if got := renderProgress(c.p, 10); got != c.want {
			t.Errorf("renderProgress(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestCallProgressOnlyOnTerminal: toolhost call draws no progress bar when
// stderr is not a terminal (a pipe, a file, a buffer), even when the server
// sends progress; the bar is drawn on a terminal and cleared before the
// result.
func TestCallProgressOnlyOnTerminal(t *testing.T) {
	cfg := writeConfig(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-progress"]
`)
	code, stdout, stderr := runCLI("--config", cfg, "call", "fx__progress", "--args", `{"steps":3}`)
	if code != exitOK || stdout != "done; token <nil>\n" || stderr != "" {
		t.Errorf("not a terminal: exit %d, stdout %q, stderr %q; want no progress token and nothing on stderr", code, stdout, stderr)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	if f, err := os.Open("/dev/tty"); err == nil {
		defer f.Close()
		if !isTerminal(f) {
			t.Error("/dev/tty should be a terminal")
		}
	}
}
