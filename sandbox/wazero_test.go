package sandbox

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// TestNoUnsafeOrReflect: sandbox drives wazero through its public API
// (issue 26 item 4): no file of the package imports unsafe or reflect,
// so none can read another package's unexported fields.
func TestNoUnsafeOrReflect(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "unsafe" || path == "reflect" {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}

// wasmV2 assembles a minimal v2 module: list_tools and call_tool return 0
// without output, and it imports the functions imports ([module, name]
// pairs, type () -> ()).
func wasmV2(imports ...[2]string) []byte {
	name := func(s string) []byte { return append(uleb(uint64(len(s))), s...) }
	section := func(id byte, body []byte) []byte {
		return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, section(1, []byte{2, 0x60, 0, 1, 0x7f, 0x60, 0, 0})...)
	if len(imports) > 0 {
		body := uleb(uint64(len(imports)))
		for _, im := range imports {
			body = append(append(append(body, name(im[0])...), name(im[1])...), 0, 1)
		}
		b = append(b, section(2, body)...)
	}
	b = append(b, section(3, []byte{2, 0, 0})...)
	n := uint64(len(imports))
	exp := []byte{2}
	exp = append(append(append(exp, name("list_tools")...), 0), uleb(n)...)
	exp = append(append(append(exp, name("call_tool")...), 0), uleb(n+1)...)
	b = append(b, section(7, exp)...)
	body := []byte{4, 0, 0x41, 0, 0x0b}
	b = append(b, section(10, append(append([]byte{2}, body...), body...))...)
	return b
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// withModuleName replaces wasm's "name" custom section (Go writes one
// with function names) with one that names the module name (wazero names
// an instance after it unless told otherwise).
func withModuleName(tb testing.TB, wasm []byte, name string) []byte {
	tb.Helper()
	out := append([]byte(nil), wasm[:8]...)
	for r := wasm[8:]; len(r) > 0; {
		id := r[0]
		n, w := readUleb(r[1:])
		end := 1 + w + int(n)
		if w == 0 || end > len(r) {
			tb.Fatal("malformed module")
		}
		body := r[1+w : end]
		if ln, lw := readUleb(body); id == 0 && lw > 0 && string(body[lw:lw+int(ln)]) == "name" {
			r = r[end:]
			continue
		}
		out, r = append(out, r[:end]...), r[end:]
	}
	sub := append(uleb(uint64(len(name))), name...)
	body := append(uleb(4), "name"...)
	body = append(append(append(body, 0), uleb(uint64(len(sub)))...), sub...)
	return append(append(append(out, 0), uleb(uint64(len(body)))...), body...)
}

func readUleb(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i == 10 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// TestUnknownImports: a module importing a function neither host module
// provides, or with another signature, fails Connect with ErrABI and transport.ErrInitialize (a
// permanent failure), naming the import, before any instance is made;
// hostile names are quoted, not interpreted.
func TestUnknownImports(t *testing.T) {
	e, err := NewEngine(&EngineOptions{CacheDir: t.TempDir(), NoToolCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		imports [][2]string
		want    string
	}{
		{"other-module", [][2]string{{"env", "abort"}}, `"env"."abort"`},
		{"unknown-kernel-function", [][2]string{{"extism:host/env", "'; DROP TABLE audit; --"}}, `"extism:host/env"."'; DROP TABLE audit; --"`},
		{"unknown-wasi-function", [][2]string{{"wasi_snapshot_preview1", "sock_open"}}, `"wasi_snapshot_preview1"."sock_open"`},
		{"user-host-function", [][2]string{{"extism:host/user", "my_fn"}, {"extism:host/env", "alloc"}}, `"extism:host/user"."my_fn"`},
		{"go-sdk-internal-module", [][2]string{{"toolhost:extism/env", "alloc"}}, `"toolhost:extism/env"."alloc"`},
		{"wrong-signature", [][2]string{{"extism:host/env", "alloc"}}, `"extism:host/env"."alloc" (imported as () -> (), provided as (i64) -> (i64))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".wasm")
			if err := os.WriteFile(path, wasmV2(tc.imports...), 0o644); err != nil {
				t.Fatal(err)
			}
			p := e.Plugin(&Manifest{Name: tc.name, Path: path}, nil)
			defer p.Close()
			_, err := p.Connect(context.Background())
			t.Log(err)
			for _, w := range []error{ErrABI, transport.ErrInitialize, transport.ErrPermanent} {
				if !errors.Is(err, w) {
					t.Errorf("%v does not wrap %v", err, w)
				}
			}
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v does not name the import %s", err, tc.want)
			}
		})
	}
}

// TestModuleNamedLikeAHostModule: a guest whose name section calls it
// "extism:host/env" (or anything else) neither replaces nor collides with
// the host modules, and any number of its instances live side by side:
// instances are anonymous.
func TestModuleNamedLikeAHostModule(t *testing.T) {
	e := newTestEngine(t)
	echo, err := os.ReadFile(fixture(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{envModule, "wasi_snapshot_preview1", "main_1", "echo"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(name)+".wasm")
			if err := os.WriteFile(path, withModuleName(t, echo, name), 0o644); err != nil {
				t.Fatal(err)
			}
			p := connect(t, e, "named", Manifest{Path: path, Instances: 3, Isolation: IsolationFresh}, nil)
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					text := strconv.Itoa(i)
					res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
					if err != nil || resultText(res) != text {
						t.Errorf("call %d: %v %q", i, err, resultText(res))
					}
				})
			}
			wg.Wait()
		})
	}
}
