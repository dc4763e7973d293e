package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestServeClientLimits: [serve] max_sessions and max_concurrent default
// to config.DefaultMaxSessions and config.DefaultMaxConcurrent, a
// [serve.clients.NAME] inherits [serve]'s and may override them, and a
// value below 1 is an error at its position.
func TestServeClientLimits(t *testing.T) {
	const clients = "[serve.clients.a]\ntoken = \"aaaaaaaaaaaaaaaaaaaa\"\n\n[serve.clients.b]\ntoken = \"bbbbbbbbbbbbbbbbbbbb\"\nmax_sessions = 3\n"
	cfg, err := config.Parse([]byte(clients), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Serve.ClientLimits, (config.ClientLimits{MaxSessions: config.DefaultMaxSessions, MaxConcurrent: config.DefaultMaxConcurrent}); got != want {
		t.Errorf("[serve] limits %+v; want %+v", got, want)
	}
	if got, want := cfg.Serve.Clients["b"].ClientLimits, (config.ClientLimits{MaxSessions: 3, MaxConcurrent: config.DefaultMaxConcurrent}); got != want {
		t.Errorf("b's limits %+v; want %+v", got, want)
	}

	cfg, err = config.Parse([]byte("[serve]\nmax_sessions = 5\nmax_concurrent = 7\n\n"+clients), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Serve.Clients["a"].ClientLimits, (config.ClientLimits{MaxSessions: 5, MaxConcurrent: 7}); got != want {
		t.Errorf("a's limits %+v; want [serve]'s %+v", got, want)
	}
	if got, want := cfg.Serve.Clients["b"].ClientLimits, (config.ClientLimits{MaxSessions: 3, MaxConcurrent: 7}); got != want {
		t.Errorf("b's limits %+v; want %+v", got, want)
	}

	for _, c := range []struct{ src, want string }{
		{"[serve]\nmax_sessions = 0\n", "t.toml:2: serve.max_sessions: 0 is out of range: use 1 or more"},
		{"[serve]\nmax_concurrent = -1\n", "t.toml:2: serve.max_concurrent: -1 is out of range"},
		{clients + "max_concurrent = 0\n", "t.toml:7: serve.clients.b.max_concurrent: 0 is out of range"},
		{"[serve]\nmax_sessions = \"many\"\n", "t.toml:2: serve.max_sessions: must be an integer"},
	} {
		_, err := config.Parse([]byte(c.src), &config.Options{Name: "t.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.src, err, c.want)
		}
	}
}
