package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
)

func TestIdempotencyConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[store]
idempotency_ttl = "2d"

[tools.srv__put]
idempotent = true
`), &config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Store.IdemTTL(); got != 48*time.Hour {
		t.Fatalf("ttl %v", got)
	}
	if !cfg.Tools["srv__put"].Idempotent {
		t.Fatal("idempotent not read")
	}
	cfg, err = config.Parse([]byte("[policy]\ndefault = \"allow\"\n"), &config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Store.IdemTTL(); got != config.DefaultIdempotencyTTL {
		t.Fatalf("default ttl %v", got)
	}
	for _, bad := range []struct{ toml, want string }{
		{"[store]\nidempotency_ttl = \"0s\"\n", "store.idempotency_ttl"},
		{"[store]\nidempotency_ttl = \"-1h\"\n", "store.idempotency_ttl"},
		{"[store]\nidempotency_ttl = \"soon\"\n", "idempotency_ttl"},
		{"[tools.srv__put]\nidempotent = \"yes\"\n", "idempotent"},
	} {
		_, err := config.Parse([]byte(bad.toml), &config.Options{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: err = %v, want one naming %s and its line", bad.toml, err, bad.want)
		}
	}
}
