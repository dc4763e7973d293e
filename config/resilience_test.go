package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const resilienceBase = `
[servers.a]
command = "a"
`

// TestResilienceKeys: [tools.NAME] timeout, max_retries, backoff (string
// or table) and fallback (string or list) decode, and their accessors give
// the documented defaults.
func TestResilienceKeys(t *testing.T) {
	cfg, err := Parse([]byte(resilienceBase+`
[tools.a__x]
timeout = "5s"
max_retries = 0
backoff = "100ms"
fallback = ["b__y", "c__z"]

[tools.a__y]
backoff = { initial = "50ms", max = "2s" }
fallback = "a__x"

[tools.a__z]
backoff = "3s"
`), &Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	x, y, z := cfg.Tools["a__x"], cfg.Tools["a__y"], cfg.Tools["a__z"]
	if x.Timeout.Std() != 5*time.Second || x.RetryLimit() != 0 || strings.Join(x.Fallback, ",") != "b__y,c__z" {
		t.Fatalf("a__x: %+v", x)
	}
	if f, m := x.RetryWait(); f != 100*time.Millisecond || m != DefaultRetryMax {
		t.Fatalf("a__x backoff %v %v", f, m)
	}
	if f, m := y.RetryWait(); f != 50*time.Millisecond || m != 2*time.Second || y.RetryLimit() != DefaultMaxRetries || len(y.Fallback) != 1 || y.Fallback[0] != "a__x" {
		t.Fatalf("a__y: %+v %v %v", y, f, m)
	}
	if f, m := z.RetryWait(); f != 3*time.Second || m != 3*time.Second {
		t.Fatalf("a__z backoff %v %v: max is at least initial", f, m)
	}
	var none *ToolOptions
	if none.RetryLimit() != DefaultMaxRetries {
		t.Fatal("nil options: default max_retries")
	}
}

// TestResilienceErrors: bad values are refused with the key and line.
func TestResilienceErrors(t *testing.T) {
	for _, c := range []struct{ toml, want string }{
		{`timeout = "0s"`, `tools.a__x.timeout`},
		{`timeout = 5`, `tools.a__x.timeout`},
		{`max_retries = -1`, `-1 is out of range`},
		{`max_retries = 21`, `21 is out of range`},
		{`max_retries = "3"`, `must be an integer`},
		{`backoff = 5`, `must be a duration, like "100ms", or a table`},
		{`backoff = { initial = "2s", max = "1s" }`, `max (1s) is less than initial (2s)`},
		{`backoff = { inital = "2s" }`, `did you mean "initial"`},
		{`fallback = []`, `is an empty list`},
		{`fallback = 3`, `must be a catalogue tool name or an array`},
		{`fallback = ["b__y", 3]`, `element 2 must be a string`},
		{`fallback = ["b__y", "b__y"]`, `"b__y" is listed twice`},
		{`fallback = ["a__x"]`, `cannot be its own fallback`},
		{`fallback = "'; DROP TABLE audit; --"`, `is not a catalogue tool name`},
	} {
		_, err := Parse([]byte(resilienceBase+"\n[tools.a__x]\n"+c.toml+"\n"), &Options{Name: "t.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.toml:") {
			t.Errorf("%s: got %v, want %q with its position", c.toml, err, c.want)
		}
	}
}

// TestResilienceReadme: the README's example of the resilience keys is a
// valid configuration, and means what the README says.
func TestResilienceReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### Per-tool resilience and circuit breakers that survive\n")
	if !ok {
		t.Fatal("README section not found")
	}
	_, block, _ := strings.Cut(sec, "```toml\n")
	block, _, _ = strings.Cut(block, "```")
	cfg, err := Parse([]byte(block), &Options{Name: "README.md"})
	if err != nil {
		t.Fatal(err)
	}
	tl := cfg.Tools["fs__read_file"]
	first, most := tl.RetryWait()
	if tl.Timeout.Std() != 5*time.Second || tl.RetryLimit() != 2 || first != 100*time.Millisecond || most != time.Second ||
		strings.Join(tl.Fallback, " ") != "backup__read_file cache__read_file" || !tl.Retry {
		t.Fatalf("README example: %+v", tl)
	}
}
