package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/sandbox"
)

// TestCannotHealFailsAtOnce: a plugin whose start cannot succeed until its
// file or configuration changes (missing module, sha256 mismatch, no
// supported ABI, memory cap below the module's declared minimum) goes
// straight to failed, without one restart, while a healthy plugin next to it
// serves.
func TestCannotHealFailsAtOnce(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	dir := t.TempDir()
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	noABI := filepath.Join(dir, "empty.wasm")
	if err := os.WriteFile(noABI, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := strings.NewReplacer("@ECHO@", echo, "@NOABI@", noABI).Replace(`
[plugins.ok]
path = "@ECHO@"

[plugins.missing]
path = "no-such.wasm"
restart_backoff = { min = "1ms", max = "2ms" }

[plugins.pinned]
path = "@ECHO@"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
restart_backoff = { min = "1ms", max = "2ms" }

[plugins.noabi]
path = "@NOABI@"
restart_backoff = { min = "1ms", max = "2ms" }

[plugins.small]
path = "@ECHO@"
memory = "64KiB"
restart_backoff = { min = "1ms", max = "2ms" }
`)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "heal.toml", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		h.Close()
		goleak.VerifyNone(t, ignore)
	}()
	cases := []struct {
		name     string
		sentinel error
		why      string
	}{
		{"missing", os.ErrNotExist, "not restarted: the module file does not exist; Host.Restart starts it again"},
		{"pinned", sandbox.ErrChecksum, "not restarted: the module file does not match its sha256 pin; Host.Restart starts it again"},
		{"noabi", sandbox.ErrABI, "not restarted: the module is not a plugin of a supported ABI; Host.Restart starts it again"},
		{"small", sandbox.ErrMemoryLimit, "not restarted: its memory cap is below what the module needs to start; Host.Restart starts it again"},
	}
	for _, tc := range cases {
		st := waitState(t, h, tc.name, host.StateFailed)
		if st.Restarts != 0 || !errors.Is(st.Err, tc.sentinel) || !strings.HasSuffix(st.LastError, tc.why) {
			t.Errorf("%s: restarts %d, error %q; want 0 restarts and an error ending %q", tc.name, st.Restarts, st.LastError, tc.why)
		}
		// Restart tries again, once, and fails the same way.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := h.Restart(ctx, tc.name)
		cancel()
		if !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: Restart: %v, want %v", tc.name, err, tc.sentinel)
		}
		if st := statusOf(h, tc.name); st.State != host.StateFailed {
			t.Errorf("%s: after Restart: %s, want failed", tc.name, st.State)
		}
	}
	if res, err := h.CallTool(context.Background(), "ok__echo", map[string]any{"text": "still serving"}); err != nil || res.IsError {
		t.Fatalf("ok__echo: %v %v", res, err)
	}
}
