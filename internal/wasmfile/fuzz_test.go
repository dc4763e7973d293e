package wasmfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// FuzzParse: the module is untrusted input; the parser and the import
// rewrite must never panic, and a rewritten module must parse to the same
// imports with only the module name changed.
func FuzzParse(f *testing.F) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(wasmbuild.Build(f, filepath.Join(filepath.Dir(file), "..", "..", "testdata", "plugins"), "./counter"))
	if err != nil {
		f.Fatal(err)
	}
	const from, to = "extism:host/env", "toolhost:env"
	f.Add(b)
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x05\x01\x01a\x01b\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		out := RewriteImports(data, m, from, to)
		m2, err := Parse(out)
		if err != nil {
			t.Fatalf("rewritten module does not parse: %v", err)
		}
		if len(m2.Imports) != len(m.Imports) {
			t.Fatalf("imports %d -> %d", len(m.Imports), len(m2.Imports))
		}
		for i := range m.Imports {
			a, b := m.Imports[i], m2.Imports[i]
			if a.Name != b.Name || a.Kind != b.Kind || (a.Module != b.Module && !(a.Module == from && b.Module == to)) {
				t.Fatalf("import %d: %+v -> %+v", i, a, b)
			}
		}
	})
}
