package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// oneShot is one whole process run of a one-shot call: its wall time
// (start to reaped) and its CPU time (user + system, which on Linux
// includes the children it reaped: the server).
type oneShot struct{ wall, cpu time.Duration }

// runOneShot runs argv to its end and checks that it printed want.
func runOneShot(tb testing.TB, want string, env []string, argv ...string) oneShot {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil || !strings.Contains(out.String(), want) {
		tb.Fatalf("%s: %v\nstdout: %s\nstderr: %s", filepath.Base(argv[0]), err, out.String(), errb.String())
	}
	return oneShot{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// oneShotSetup builds the toolhost binary, the plain go-sdk client
// (testdata/plainclient) and the Go fixture server, and writes a
// configuration with the fixture as the backend fx (its own cache
// directory, no store, no plugin).
func oneShotSetup(tb testing.TB) (toolhost, plain, fixture, cfg string, env []string) {
	tb.Helper()
	toolhost = testutil.GoBinary(tb, "./cmd/toolhost")
	plain = testutil.GoBinary(tb, "./testdata/plainclient")
	fixture = testutil.Fixture(tb)
	dir := tb.TempDir()
	cfg = filepath.Join(dir, "toolhost.toml")
	body := "[host]\ncache_dir = \"" + filepath.Join(dir, "cache") + "\"\n\n[servers.fx]\ncommand = \"" + fixture + "\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	// Only what a user's shell would pass: no GODEBUG, GOGC or
	// TOOLHOST_* from the test's environment.
	env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state")}
	return toolhost, plain, fixture, cfg, env
}

// BenchmarkOneShotCall (issue 26, item 3; docs/BENCHMARKS.md "One-shot CLI
// call") runs whole processes, paired: `toolhost call fx__echo` on the Go
// fixture over stdio, and a plain go-sdk client program doing the same
// (testdata/plainclient: connect, call echo, close, exit), alternating
// which of the pair goes first. It reports the medians of wall time (start
// to reaped) and CPU time (user + system of the process and of the server
// it reaped) of each, and their ratios toolhost/plain. The target is a
// ratio ≤ 1.5; on a loaded machine the CPU ratio is the steadier figure.
//
//	go test -run '^$' -bench BenchmarkOneShotCall -benchtime 40x ./cmd/toolhost/
//
// With TOOLHOST_ONESHOT_BASELINE set to another toolhost binary (one built
// from main, say), that binary's call runs in the same rounds, its place in
// the order rotating with the others', and its medians are reported as
// baseline-wall-ms and baseline-cpu-ms: before and after in one run.
func BenchmarkOneShotCall(b *testing.B) {
	toolhost, plain, fixture, cfg, env := oneShotSetup(b)
	variants := [][]string{
		{toolhost, "--config", cfg, "call", "fx__echo", "--args", `{"text":"one shot"}`},
		{plain, "-tool", "echo", "-args", `{"text":"one shot"}`, fixture},
	}
	if base := os.Getenv("TOOLHOST_ONESHOT_BASELINE"); base != "" {
		variants = append(variants, []string{base, "--config", cfg, "call", "fx__echo", "--args", `{"text":"one shot"}`})
	}
	// Warm the page cache and toolhost's caches.
	for _, v := range variants {
		runOneShot(b, "one shot", env, v...)
	}
	wall := make([][]time.Duration, len(variants))
	cpu := make([][]time.Duration, len(variants))
	round := 0
	for b.Loop() {
		for k := range variants {
			i := (k + round) % len(variants) // each goes first in turn
			r := runOneShot(b, "one shot", env, variants[i]...)
			wall[i], cpu[i] = append(wall[i], r.wall), append(cpu[i], r.cpu)
		}
		round++
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	tw, tc, pw, pcc := median(wall[0]), median(cpu[0]), median(wall[1]), median(cpu[1])
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(tw), "toolhost-wall-ms")
	b.ReportMetric(ms(pw), "plain-wall-ms")
	b.ReportMetric(ms(tc), "toolhost-cpu-ms")
	b.ReportMetric(ms(pcc), "plain-cpu-ms")
	if pw > 0 {
		b.ReportMetric(float64(tw)/float64(pw), "wall-ratio")
	}
	if pcc > 0 {
		b.ReportMetric(float64(tc)/float64(pcc), "cpu-ratio")
	}
	if len(variants) == 3 {
		b.ReportMetric(ms(median(wall[2])), "baseline-wall-ms")
		b.ReportMetric(ms(median(cpu[2])), "baseline-cpu-ms")
	}
}
