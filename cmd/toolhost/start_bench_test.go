package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// BenchmarkCLIStart runs whole CLI commands in-process (run, as main does:
// a Host built, started, used and closed each time) on the start-time
// configuration of docs/BENCHMARKS.md (testdata/bench/start.toml): the four
// first-party plugins and the Go fixture server, with the default
// compilation and tool-list caches, warmed by one untimed run. It leaves
// out only the process's own start, so that -cpuprofile shows where a
// start's time goes; end-to-end times of the binary are measured with
// hyperfine (docs/BENCHMARKS.md, "Start").
func BenchmarkCLIStart(b *testing.B) {
	plugins := filepath.Join(testutil.Root(), "plugins")
	path := func(name string) string { return wasmbuild.Build(b, plugins, "./"+name) }
	cfg := filepath.Join(b.TempDir(), "toolhost.toml")
	body := `
[servers.fixture]
command = "` + testutil.Fixture(b) + `"

[plugins.jq]
path = "` + path("jq") + `"

[plugins.time]
path = "` + path("time") + `"

[plugins.fs]
path          = "` + path("fs") + `"
allowed_paths = { "/docs" = "ro:` + filepath.Join(testutil.Root(), "docs") + `" }

[plugins.fetch]
path          = "` + path("fetch") + `"
allowed_hosts = ["example.com"]
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"cmd=tools", []string{"--config", cfg, "tools"}},
		{"cmd=call_jq", []string{"--config", cfg, "call", "jq__jq", "--args", `{"filter":".a","input":{"a":1}}`}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if code := run(c.args, io.Discard, io.Discard); code != exitOK { // warm the caches
				b.Fatalf("%v: exit %d", c.args, code)
			}
			for b.Loop() {
				if code := run(c.args, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("%v: exit %d", c.args, code)
				}
			}
		})
	}
}
