package host_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// TestZeroConfig: a Config built by hand with nothing but a server's
// command and a plugin's path works: every zero field means its documented
// default (before, health_interval 0 made time.NewTicker panic).
func TestZeroConfig(t *testing.T) {
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	cfg := &config.Config{
		Servers: map[string]*config.Server{"s": {Command: testutil.Fixture(t)}},
		Plugins: map[string]*config.Plugin{"p": {Path: wasm}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, err := host.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, name := range []string{"s__echo", "p__echo"} {
		res, err := h.CallTool(ctx, name, map[string]any{"text": "zero"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError || len(res.Content) == 0 {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if got := cfg.Servers["s"].HealthInterval.Std(); got != config.DefaultHealthInterval {
		t.Errorf("health_interval = %v after New, want the default %v", got, config.DefaultHealthInterval)
	}

	// A Config that is invalid is refused with the config's own error.
	bad := &config.Config{Plugins: map[string]*config.Plugin{"p": {Path: wasm, Instances: -2}}}
	if _, err := host.New(ctx, bad, nil); err == nil {
		t.Fatal("New accepted instances = -2")
	} else if want := "plugins.p.instances"; !strings.Contains(err.Error(), want) {
		t.Errorf("New: %v; want it to name %s", err, want)
	}
}
