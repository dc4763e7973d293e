package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// The Extism go-sdk is the ABI oracle: TestExtismOracle runs every fixture
// plugin (testdata/plugins/*, plugins/*) through stock Extism
// (extism.NewPlugin with the same manifest: module, config, memory cap,
// mounts) and through the sandbox's own wazero runtime and Go kernel, calls
// the same exports with the same inputs on one instance of each, in the
// same order, and compares what the guest answered: return code, output
// bytes, error_set message, and whether it trapped.
//
// What is compared is the ABI, below every policy of the sandbox: the
// sandbox side enters the export as a call does (instance.enter, the one
// Go→Wasm entry, with the real host functions), without the output checks
// and error mapping of instance.call. Calls whose answer depends on a
// policy that deliberately differs from the go-sdk's (http_request's
// allowlist, memory growth beyond the cap, files outside a mount, time)
// are not in the table: the hostile fixtures are compared on their list
// export only.

// outcome is what a guest answered to one export call.
type outcome struct {
	RC   uint32
	Out  string
	Err  string // the error_set message
	Trap bool
}

type oracleCall struct {
	export string
	input  string
}

// v2Call is a call_tool input as the sandbox writes it.
func v2Call(tool, args string) oracleCall {
	return oracleCall{"call_tool", `{"request":{"name":"` + tool + `","arguments":` + args + `},"context":{"id":1}}`}
}

var v2List = oracleCall{"list_tools", `{"context":{"id":1}}`}

func TestExtismOracle(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	pluginsDir := filepath.Join(filepath.Dir(file), "..", "plugins")
	mount := t.TempDir()
	if err := os.WriteFile(filepath.Join(mount, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(mount, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := `'; DROP TABLE audit; --` + "\u0000\u2028\"\\"
	hostileJSON, _ := json.Marshal(hostile)
	cases := []struct {
		fixture string
		plugins bool // under plugins/, not testdata/plugins/
		config  map[string]string
		mounts  bool
		calls   []oracleCall
	}{
		{fixture: "echo", config: map[string]string{"echo_prefix": "> ", "k": "v"}, calls: []oracleCall{
			v2List,
			v2Call("echo", `{"text":"hello"}`),
			v2Call("echo", `{"text":`+string(hostileJSON)+`}`),
			v2Call("echo", `{"text":"`+strings.Repeat("x", 100000)+`"}`),
			v2Call("config", `{"key":"k"}`),
			v2Call("config", `{"key":"missing"}`),
			v2Call("log", `{"text":"a log line"}`),
			v2Call("print", `{"text":"printed"}`),
			v2Call("fail", `{}`),
			v2Call("rc", `{}`),
			v2Call("badjson", `{}`),
			v2Call("nope", `{}`),
			{"list_resources", `{"context":{"id":1}}`},
			{"read_resource", `{"request":{"uri":"echo://hello"},"context":{"id":1}}`},
			{"list_prompts", `{"context":{"id":1}}`},
			{"get_prompt", `{"request":{"name":"greet","arguments":{"who":"x"}},"context":{"id":1}}`},
		}},
		{fixture: "pdkecho", calls: []oracleCall{v2List, v2Call("echo", `{"text":"hello"}`), v2Call("echo", `{"text":`+string(hostileJSON)+`}`), v2Call("echo", `{}`), v2Call("nope", `{}`), {"call_tool", `not json`}}},
		{fixture: "counter", calls: []oracleCall{v2List, v2Call("incr", `{}`), v2Call("incr", `{}`), v2Call("incr", `{}`)}},
		{fixture: "manytools", calls: []oracleCall{v2List}},
		{fixture: "v1", calls: []oracleCall{{"describe", `{}`}, {"call", `{"params":{"name":"hello","arguments":{"who":"oracle"}}}`}}},
		{fixture: "bigout", calls: []oracleCall{v2List, v2Call("big", `{"text":"70000"}`)}},
		{fixture: "errflood", calls: []oracleCall{v2List, v2Call("err", `{"size":"5000"}`), v2Call("out", `{"size":"5000"}`)}},
		{fixture: "pdkbench", calls: []oracleCall{v2List}},
		{fixture: "hog", calls: []oracleCall{v2List}},
		{fixture: "loop", calls: []oracleCall{v2List}},
		{fixture: "escape", calls: []oracleCall{v2List}},
		{fixture: "fdleak", calls: []oracleCall{v2List}},
		{fixture: "netout", calls: []oracleCall{v2List}},
		{fixture: "panic", calls: []oracleCall{v2List, v2Call("panic", `{}`)}},
		{fixture: "jq", plugins: true, calls: []oracleCall{
			v2List,
			v2Call("jq", `{"filter":".a | map(. * 2)","input":{"a":[1,2,3]}}`),
			v2Call("jq", `{"filter":"[.[] | select(. > 1)]","input":[1,2,3]}`),
			v2Call("jq", `{"filter":".[","input":{}}`),
		}},
		{fixture: "time", plugins: true, calls: []oracleCall{
			v2List,
			v2Call("convert_time", `{"time":"2026-01-02T03:04:05Z","source_timezone":"UTC","target_timezone":"Asia/Tokyo"}`),
			v2Call("time_between", `{"start":"2026-01-01T00:00:00Z","end":"2026-03-01T12:00:00Z"}`),
			v2Call("convert_time", `{"time":"not a time","source_timezone":"Nowhere/Else","target_timezone":"UTC"}`),
		}},
		{fixture: "fs", plugins: true, mounts: true, calls: []oracleCall{
			v2List,
			v2Call("read_file", `{"path":"/data/a.txt"}`),
			v2Call("list_directory", `{"path":"/data"}`),
			v2Call("read_file", `{"path":"/data/missing.txt"}`),
		}},
		{fixture: "fetch", plugins: true, calls: []oracleCall{v2List}},
	}
	e := newTestEngine(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			var path string
			if tc.plugins {
				path = wasmbuild.Build(t, pluginsDir, "./"+tc.fixture)
			} else {
				path = fixture(t, tc.fixture)
			}
			m := Manifest{Name: tc.fixture, Path: path, Config: tc.config, Instances: 1}
			em := extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: path}}, Config: tc.config}
			if tc.mounts {
				m.Mounts = []Mount{{Host: mount, Guest: "/data"}}
				em.AllowedPaths = map[string]string{"ro:" + mount: "/data"}
			}
			p := connect(t, e, tc.fixture, m, &PluginOptions{Logger: testLogger(t)})
			em.Memory = &extism.ManifestMemory{MaxPages: p.memPages}
			// The same compilation cache: only the first run compiles.
			rc := wazero.NewRuntimeConfig().WithCompilationCache(e.cache)
			stock, err := extism.NewPlugin(ctx, em, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer stock.Close(ctx)
			in, err := p.newInstance(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer in.close()
			for i, c := range tc.calls {
				want := stockCall(ctx, stock, c)
				got := sandboxCall(ctx, in, c)
				if got != want {
					t.Errorf("call %d %s %.200s:\n stock   %+.600v\n sandbox %+.600v", i, c.export, c.input, want, got)
				}
			}
			if len(tc.calls) > 0 && t.Failed() {
				return
			}
			t.Logf("%d calls answered alike", len(tc.calls))
		})
	}
}

// stockCall calls c through the Extism go-sdk.
func stockCall(ctx context.Context, p *extism.Plugin, c oracleCall) outcome {
	rc, out, err := p.CallWithContext(ctx, c.export, []byte(c.input))
	o := outcome{RC: rc, Out: string(out)}
	if err != nil {
		// The go-sdk returns the error_set message as the error, and a
		// trap's wazero error otherwise.
		if msg := err.Error(); strings.Contains(msg, "wasm error") || strings.Contains(msg, "wasm stack trace") {
			o.Trap, o.RC = true, 0
		} else {
			o.Err = msg
		}
	}
	return o
}

// sandboxCall calls c on in as instance.call does, and reports the guest's
// answer before the sandbox's checks.
func sandboxCall(ctx context.Context, in *instance, c oracleCall) outcome {
	in.callCtx = ctx
	in.fault, in.errMsg = nil, ""
	in.export, in.tooBig = c.export, 0
	defer func() { in.callCtx = nil }()
	if !in.k.setInput([]byte(c.input)) {
		return outcome{Trap: true, Err: "input does not fit"}
	}
	rc, err := in.enter(ctx, c.export, nil)
	if err != nil {
		return outcome{Trap: true}
	}
	o := outcome{RC: uint32(rc), Err: in.errMsg}
	out, _ := in.k.bytes(in.k.out, in.k.outLen)
	o.Out = string(out)
	return o
}
