package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestServeLimits: the [serve] limits against hostile HTTP clients
// (read_timeout, idle_timeout, max_connections, max_connections_per_peer,
// metrics_token) get their defaults, take ${VAR} for the token, and a bad
// value is an error at its key and line that never quotes the token.
func TestServeLimits(t *testing.T) {
	cfg, err := Parse([]byte("[serve]\nlisten = \"127.0.0.1:1\"\n"), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Serve
	if s.ReadTimeout.Std() != DefaultReadTimeout || s.IdleTimeout.Std() != DefaultIdleTimeout ||
		s.MaxConnections != DefaultMaxConnections || s.MaxConnectionsPerPeer != DefaultMaxConnectionsPerPeer || s.MetricsToken != "" {
		t.Errorf("defaults = %+v", s)
	}

	cfg, err = Parse([]byte(`[serve]
read_timeout = "2m"
idle_timeout = "5s"
max_connections = 50
metrics_token = "${TOKEN}-0123456789"
`), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	s = cfg.Serve
	if s.ReadTimeout.Std() != 2*time.Minute || s.IdleTimeout.Std() != 5*time.Second || s.MaxConnections != 50 || s.MetricsToken != "s3cret-0123456789" {
		t.Errorf("set = %+v", s)
	}
	if s.MaxConnectionsPerPeer != 50 {
		t.Errorf("max_connections = 50 without max_connections_per_peer: per peer %d, want 50", s.MaxConnectionsPerPeer)
	}

	for _, tc := range []struct{ src, key, msg string }{
		{"read_timeout = \"0s\"", "serve.read_timeout", "greater than 0"},
		{"idle_timeout = \"-1s\"", "serve.idle_timeout", "must not be negative"},
		{"read_timeout = \"soon\"", "serve.read_timeout", "duration"},
		{"max_connections = 0", "serve.max_connections", "use 1 or more"},
		{"max_connections_per_peer = -3", "serve.max_connections_per_peer", "use 1 or more"},
		{"max_connections = 10\nmax_connections_per_peer = 11", "serve.max_connections_per_peer", "11 is more than max_connections (10)"},
		{"max_connections_per_peer = 2000", "serve.max_connections_per_peer", "more than max_connections (1024)"},
		{"max_connections = \"many\"", "serve.max_connections", "integer"},
		{"metrics_token = \"short-secret\"", "serve.metrics_token", "is 12 characters: use at least 16"},
		{"metrics_token = \"${NOPE}\"", "serve.metrics_token", "NOPE is not set"},
	} {
		_, err := Parse([]byte("[serve]\nlisten = \"127.0.0.1:1\"\n"+tc.src+"\n"), testOptions())
		var list ErrorList
		if !errors.As(err, &list) || len(list) != 1 {
			t.Errorf("%s: err = %v, want one error", tc.src, err)
			continue
		}
		e := list[0]
		line := 3 + strings.Count(tc.src, "\n")
		if e.Key != tc.key || e.Line != line || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: {Line:%d Key:%q Msg:%q}, want %d %s ...%s...", tc.src, e.Line, e.Key, e.Msg, line, tc.key, tc.msg)
		}
		if strings.Contains(e.Msg, "short-secret") {
			t.Errorf("%s: the message quotes the token: %s", tc.src, e.Msg)
		}
	}
}
