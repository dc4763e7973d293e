package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
)

// TestRateKeys: rate on [serve.clients.NAME], [profiles.NAME] and
// [tools.NAME] is parsed into RateLimit (burst defaults to N), and a bad
// one is an error naming its key and line and saying how to write it.
func TestRateKeys(t *testing.T) {
	src := `[serve.clients.bot]
token = "aaaaaaaaaaaaaaaaaaaa"
rate = "60/m"

[profiles.ro]
rate = "10/s burst 3"

[tools.gh__search]
rate = "1000/h"
`
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got  config.RateLimit
		want config.RateLimit
	}{
		{cfg.Serve.Clients["bot"].RateLimit, config.RateLimit{N: 60, Per: time.Minute, Burst: 60}},
		{cfg.Profiles["ro"].RateLimit, config.RateLimit{N: 10, Per: time.Second, Burst: 3}},
		{cfg.Tools["gh__search"].RateLimit, config.RateLimit{N: 1000, Per: time.Hour, Burst: 1000}},
	} {
		if c.got != c.want {
			t.Errorf("got %+v; want %+v", c.got, c.want)
		}
	}
	if !cfg.HasRates() {
		t.Error("HasRates() = false")
	}
	if s := cfg.Profiles["ro"].RateLimit.String(); s != "10/s burst 3" {
		t.Errorf("String() = %q", s)
	}
	if cfg, err := config.Parse([]byte("[tools.x]\nretry = true\n"), nil); err != nil || cfg.HasRates() {
		t.Errorf("no rate: HasRates() = %v, %v", cfg.HasRates(), err)
	}

	for _, c := range []struct{ src, want string }{
		{"[tools.t]\nrate = \"60 per minute\"\n", `t.toml:2: tools.t.rate: "60 per minute" is not a rate: write it as N/s, N/m or N/h`},
		{"[tools.t]\nrate = \"60/d\"\n", `t.toml:2: tools.t.rate: "60/d": "d" is not a unit: use s, m or h`},
		{"[profiles.p]\n\nrate = \"0/s\"\n", `t.toml:3: profiles.p.rate: "0/s": the number of calls 0 is out of range: use 1 to 1000000`},
		{"[profiles.p]\nrate = \"-5/s\"\n", `profiles.p.rate: "-5/s": the number of calls -5 is out of range`},
		{"[tools.t]\nrate = \"99999999999999999999/s\"\n", `is out of range: use 1 to 1000000`},
		{"[tools.t]\nrate = \"1.5/s\"\n", `"1.5" is not a whole number`},
		{"[tools.t]\nrate = \"10/s burst 0\"\n", `tools.t.rate: "10/s burst 0": the burst 0 is out of range`},
		{"[tools.t]\nrate = \"10/s bursts 4\"\n", `is not a rate`},
		{"[tools.t]\nrate = \"/s\"\n", `is not a whole number`},
		{"[tools.t]\nrate = 60\n", `tools.t.rate`},
		{"[serve.clients.c]\ntoken = \"cccccccccccccccccccc\"\nrate = \"'; DROP TABLE rate_buckets; --\"\n", `t.toml:3: serve.clients.c.rate: "'; DROP TABLE rate_buckets; --" is not a rate`},
	} {
		_, err := config.Parse([]byte(c.src), &config.Options{Name: "t.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v; want it to contain %q", c.src, err, c.want)
		}
	}
}

// TestRateValidate: a Config built in Go gets its rates parsed by Validate.
func TestRateValidate(t *testing.T) {
	c := &config.Config{Tools: map[string]*config.ToolOptions{"a__b": {Rate: "5/s"}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.Tools["a__b"].RateLimit; got != (config.RateLimit{N: 5, Per: time.Second, Burst: 5}) {
		t.Errorf("RateLimit %+v", got)
	}
	c.Tools["a__b"].Rate = "5/fortnight"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tools.a__b.rate") {
		t.Errorf("Validate: %v; want an error naming tools.a__b.rate", err)
	}
}

// FuzzParseRate: ParseRate never panics, and what it accepts formats back
// to a key it parses the same.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"60/m", "10/s burst 3", "1/h", "x", "9/s burst", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := config.ParseRate(s)
		if err != nil || r.IsZero() {
			return
		}
		back, err := config.ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, r, r.String(), back, err)
		}
	})
}
