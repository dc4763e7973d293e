package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"

	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/testutil"
)

// Init bounds of TestNoHeavyInit, from GODEBUG=inittrace=1 of the toolhost
// binary (docs/BENCHMARKS.md, "One-shot CLI call"). Before issue 26 item 3,
// santhosh-tekuri/jsonschema compiled every JSON Schema metaschema in its
// init (1.7 MB, 21,000 allocations) and package main compiled 13 regular
// expressions (283 KB, 2,662 allocations); after it the heaviest package is
// host (169 KB, 1,477 allocations: its exported ToolNamePattern and the
// tool-poisoning patterns every catalogue build uses) and all of them
// together allocate about 1.5 MB. Work that only some commands need is done
// when they need it (internal/lazyre, config's nameRule, the patched
// jsonschema in internal/jsonschemav6).
const (
	maxInitBytesPerPackage  = 256 << 10
	maxInitAllocsPerPackage = 4000
	maxInitBytesTotal       = 2 << 20
	maxInitAllocsTotal      = 24000
)

type initCost struct {
	pkg           string
	bytes, allocs int
}

// parseInitTrace reads GODEBUG=inittrace=1 lines:
//
//	init github.com/x/y @1.2 ms, 0.3 ms clock, 4096 bytes, 12 allocs
func parseInitTrace(t *testing.T, stderr []byte) []initCost {
	t.Helper()
	var out []initCost
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		out = append(out, initCost{f[1], b, a})
	}
	return out
}

// TestNoHeavyInit runs the built toolhost binary with GODEBUG=inittrace=1
// and fails if a package's initialisation (its init functions and
// package-level variables) allocates more than maxInitBytesPerPackage or
// maxInitAllocsPerPackage, or all of them together more than the totals:
// every command pays for every linked package's init, so what only some
// commands need (JSON Schema metaschemas, regular expressions of import or
// add, Prometheus registries, Wasm runtimes, OTLP exporters) is built when a
// command needs it. Allocations are counted exactly whatever the machine's
// load, unlike the init times, which the test does not bound.
func TestNoHeavyInit(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cmd := exec.Command(bin, "help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("toolhost help: %v\n%s", err, stderr.Bytes())
	}
	costs := parseInitTrace(t, stderr.Bytes())
	if len(costs) < 50 {
		t.Fatalf("only %d inittrace lines: is GODEBUG=inittrace=1 honoured?\n%s", len(costs), stderr.Bytes())
	}
	var bytesTotal, allocsTotal int
	for _, c := range costs {
		bytesTotal += c.bytes
		allocsTotal += c.allocs
		if c.bytes > maxInitBytesPerPackage || c.allocs > maxInitAllocsPerPackage {
			t.Errorf("package %s allocates %d bytes in %d allocations at init (bounds %d bytes, %d allocations): build what it needs at first use",
				c.pkg, c.bytes, c.allocs, maxInitBytesPerPackage, maxInitAllocsPerPackage)
		}
	}
	if bytesTotal > maxInitBytesTotal || allocsTotal > maxInitAllocsTotal {
		t.Errorf("the %d packages' inits allocate %d bytes in %d allocations (bounds %d bytes, %d allocations)",
			len(costs), bytesTotal, allocsTotal, maxInitBytesTotal, maxInitAllocsTotal)
	}
	t.Logf("%d packages initialised: %d bytes, %d allocations", len(costs), bytesTotal, allocsTotal)
}

// TestLazyRegexpsCompile compiles every internal/lazyre expression of the
// packages linked into toolhost: a lazy expression that does not compile
// would otherwise panic only at its first use.
func TestLazyRegexpsCompile(t *testing.T) {
	if bad := lazyre.CompileAll(); bad != nil {
		t.Fatalf("lazy regular expressions that do not compile: %v", bad)
	}
}

// schemaChildEnv makes the test binary, re-executed by
// TestSchemaFirstUseConcurrent, run the child's part.
const schemaChildEnv = "TOOLHOST_TEST_SCHEMA_FIRST_USE"

// TestSchemaFirstUseConcurrent: the metaschemas of the patched jsonschema
// (internal/jsonschemav6) are compiled at first use, not in init; the first
// uses race here, in a fresh process (so that nothing compiled them
// before), under -race when the test runs with it: 16 goroutines compile
// schemas of every draft at once, valid and invalid ones (an invalid schema
// is caught by its draft's metaschema, so it must be compiled and used),
// and a schema with an embedded resource of another draft.
func TestSchemaFirstUseConcurrent(t *testing.T) {
	if os.Getenv(schemaChildEnv) == "1" {
		schemaFirstUse(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSchemaFirstUseConcurrent$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), schemaChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("schema first use: ok")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func schemaFirstUse(t *testing.T) {
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	}
	compile := func(doc string) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			return err
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem:///s.json", v); err != nil {
			return err
		}
		_, err = c.Compile("mem:///s.json")
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := drafts[i%len(drafts)]
			if err := compile(`{"$schema":"` + d + `","type":"object","properties":{"n":{"type":"integer","minimum":1}}}`); err != nil {
				errs <- fmt.Errorf("%s, valid schema: %w", d, err)
			}
			if err := compile(`{"$schema":"` + d + `","type":5}`); err == nil {
				errs <- fmt.Errorf("%s: a schema with \"type\": 5 compiled", d)
			}
			// A 2020-12 schema embedding a draft-07 resource: the
			// validator switches to the embedded resource's metaschema.
			if err := compile(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"x":{"$id":"http://x.example/x","$schema":"http://json-schema.org/draft-07/schema#","type":"string"}},"$ref":"http://x.example/x"}`); err != nil {
				errs <- fmt.Errorf("embedded draft-07 resource: %w", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !t.Failed() {
		t.Log("schema first use: ok")
	}
}

func TestCommandOf(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"call", "x"}, "call"},
		{[]string{"--config", "a.toml", "call"}, "call"},
		{[]string{"-config", "serve", "tools"}, "tools"}, // serve is --config's value
		{[]string{"--config=a.toml", "--log-level", "debug", "serve", "--stdio"}, "serve"},
		{[]string{"--log-level=off", "-"}, "-"},
		{[]string{"--config"}, ""},
		{[]string{"--help"}, ""},
	} {
		if got := commandOf(c.args); got != c.want {
			t.Errorf("commandOf(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestOneShotGC: a one-shot command raises GOGC to oneShotGCPercent, serve
// keeps it, and GOGC in the environment wins.
func TestOneShotGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	gogc, had := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	defer func() {
		if had {
			os.Setenv("GOGC", gogc)
		}
	}()
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }

	oneShotGC([]string{"--config", "x.toml", "serve", "--stdio"})
	if p := percent(); p != 100 {
		t.Errorf("serve: GOGC %d, want 100", p)
	}
	oneShotGC([]string{"--config", "x.toml", "call", "fx__echo"})
	if p := percent(); p != oneShotGCPercent {
		t.Errorf("call: GOGC %d, want %d", p, oneShotGCPercent)
	}
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "50")
	oneShotGC([]string{"call", "fx__echo"})
	if p := percent(); p != 100 {
		t.Errorf("call with GOGC set: the collector's percentage changed to %d", p)
	}
}
