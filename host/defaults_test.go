package host_test

import (
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
)

// TestDefaultStartupTimeout: host's documented default startup timeout is
// the one a backend gets when its table sets none (config's), not a second
// value.
func TestDefaultStartupTimeout(t *testing.T) {
	cfg, err := config.Parse([]byte("[servers.s]\ncommand = \"x\"\n"), &config.Options{Name: "d.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["s"].StartupTimeout.Std(); got != host.DefaultStartupTimeout {
		t.Errorf("a server's default startup_timeout is %v, host.DefaultStartupTimeout %v", got, host.DefaultStartupTimeout)
	}
}
