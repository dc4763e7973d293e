// Package wasmbuild builds WebAssembly plugins for tests, so that
// `go test ./sandbox/` works on a fresh clone without `make`.
//
// Build runs
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o <cache>/<name>.wasm <pkg>
//
// in the module directory, once per test process per (moduleDir, pkg); the Go
// build cache makes repeated runs cheap. Outputs go to
// <os.UserCacheDir>/toolhost/wasmbuild (or os.TempDir when there is no user
// cache dir), written under a temporary name and renamed, so concurrent test
// processes never see a half-written module.
package wasmbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

type result struct {
	once sync.Once
	path string
	err  error
}

var (
	mu    sync.Mutex
	built = map[string]*result{}
)

// Build builds the main package pkg (an import path or a "./dir" relative to
// moduleDir) of the Go module in moduleDir to a wasip1 reactor module and
// returns the .wasm path. It fails tb if the build fails.
func Build(tb testing.TB, moduleDir, pkg string) string {
	tb.Helper()
	abs, err := filepath.Abs(moduleDir)
	if err != nil {
		tb.Fatalf("wasmbuild: %v", err)
	}
	key := abs + "\x00" + pkg
	mu.Lock()
	r := built[key]
	if r == nil {
		r = &result{}
		built[key] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.path, r.err = build(abs, pkg) })
	if r.err != nil {
		tb.Fatalf("wasmbuild: %v", r.err)
	}
	return r.path
}

func build(moduleDir, pkg string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(moduleDir + "\x00" + pkg))
	dir := filepath.Join(base, "toolhost", "wasmbuild", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := path.Base(pkg)
	if name == "." || name == "/" {
		name = filepath.Base(moduleDir)
	}
	out := filepath.Join(dir, name+".wasm")
	tmp, err := os.CreateTemp(dir, name+"-*.wasm.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", tmp.Name(), pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, moduleDir, err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}
