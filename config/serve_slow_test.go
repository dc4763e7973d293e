package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestServeSlowConsumerKeys: [serve] write_timeout and notify_queue get
// their defaults, take a valid value, and refuse a bad one with an error
// that names the key.
func TestServeSlowConsumerKeys(t *testing.T) {
	cfg, err := config.Parse([]byte("[serve]\n"), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Serve.WriteTimeout.Std() != config.DefaultWriteTimeout || cfg.Serve.NotifyQueue != config.DefaultNotifyQueue {
		t.Errorf("defaults: write_timeout %v notify_queue %d", cfg.Serve.WriteTimeout, cfg.Serve.NotifyQueue)
	}
	cfg, err = config.Parse([]byte("[serve]\nwrite_timeout = \"2s\"\nnotify_queue = 8\n"), &config.Options{Name: "t.toml"})
	if err != nil || cfg.Serve.WriteTimeout.Std().String() != "2s" || cfg.Serve.NotifyQueue != 8 {
		t.Fatalf("set: %v %+v", err, cfg)
	}
	for _, tc := range []struct{ src, key, says string }{
		{`write_timeout = "0s"`, "serve.write_timeout", "greater than 0"},
		{`write_timeout = "-1s"`, "serve.write_timeout", "must not be negative"},
		{`notify_queue = 0`, "serve.notify_queue", "use 1 or more"},
		{`notify_queue = 65537`, "serve.notify_queue", "use 1 to 65536"},
	} {
		_, err := config.Parse([]byte("[serve]\n"+tc.src+"\n"), &config.Options{Name: "t.toml"})
		var list config.ErrorList
		if !errors.As(err, &list) || len(list) != 1 || list[0].Key != tc.key || !strings.Contains(list[0].Error(), tc.says) {
			t.Errorf("%s: %v; want one error on %s saying %q", tc.src, err, tc.key, tc.says)
		}
	}
}
