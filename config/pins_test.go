package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestPinModes: [host] pin is every backend's mode unless its own pin
// overrides it; the default is off; a bad value names the key and line.
func TestPinModes(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[host]
pin = "trust-first"

[servers.a]
command = "x"

[servers.b]
command = "x"
pin = "approve"

[plugins.c]
path = "c.wasm"
pin = "off"
`), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": config.PinTrustFirst, "b": config.PinApprove, "c": config.PinOff} {
		if got := cfg.PinOf(name); got != want {
			t.Errorf("PinOf(%s) = %q, want %q", name, got, want)
		}
	}
	if !cfg.PinsOn() {
		t.Error("PinsOn false")
	}
	off, err := config.Parse([]byte("[servers.a]\ncommand = \"x\"\n"), &config.Options{Name: "t.toml"})
	if err != nil || off.PinsOn() || off.PinOf("a") != config.PinOff {
		t.Fatalf("default: %v %v", off.PinOf("a"), err)
	}
	for _, c := range []struct{ src, want string }{
		{"[host]\npin = \"sometimes\"\n", `t.toml:2: host.pin: must be "off", "trust-first" or "approve"; got "sometimes"`},
		{"[servers.a]\ncommand = \"x\"\npin = \"TRUST-FIRST\"\n", `t.toml:3: servers.a.pin: must be`},
		{"[plugins.p]\npath = \"p.wasm\"\npin = \"'; DROP TABLE tool_pins; --\"\n", `t.toml:3: plugins.p.pin: must be`},
	} {
		_, err := config.Parse([]byte(c.src), &config.Options{Name: "t.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}
