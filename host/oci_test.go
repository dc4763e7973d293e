package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/ociplugin"
	"github.com/toolhost/toolhost/internal/ociplugin/ocitest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/transport"
)

// ociHost starts a Host on toml (with @CACHE@ replaced by cache), closed
// by the returned func.
func ociHost(t *testing.T, toml, cache string) (*host.Host, func()) {
	t.Helper()
	toml = strings.ReplaceAll(toml, "@CACHE@", cache)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "oci.toml", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, func() { h.Close() }
}

// sharedCache is a cache dir shared by the test runs of a machine, so that
// a plugin compiles once (the compilation cache is keyed by content; OCI
// references by registry port, which a test's registry owns).
func sharedCache(t *testing.T) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return t.TempDir()
	}
	return filepath.Join(base, "toolhost", "wasm-test")
}

// uniqueModule copies the module at path with a custom section naming
// the test and the time appended (valid WebAssembly, a new digest).
func uniqueModule(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name, payload := "toolhost-test", t.Name()+" "+time.Now().Format(time.RFC3339Nano)
	body := append([]byte{byte(len(name))}, name+payload...)
	if len(body) > 127 {
		t.Fatal("custom section too long for a one-byte size")
	}
	b = append(append(b, 0, byte(len(body))), body...)
	out := filepath.Join(t.TempDir(), "unique.wasm")
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

func ociPlugin(t *testing.T, name string) (path, digest string) {
	t.Helper()
	path = filepath.Join(testutil.Root(), "plugins", name+".wasm")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%v: run make plugins", err)
	}
	sum := sha256.Sum256(b)
	return path, "sha256:" + hex.EncodeToString(sum[:])
}

// TestOCIPluginLifecycle: a plugin pushed to a registry runs from an
// oci:// path and is called through the host; a moved tag is picked up
// at the next start; with the registry stopped the cached module runs and
// status says so.
func TestOCIPluginLifecycle(t *testing.T) {
	reg := ocitest.New(t)
	cache := sharedCache(t)
	timeFile, timeDigest := ociPlugin(t, "time")
	ref := reg.Ref("plugins/clock:stable")
	if _, err := ociplugin.Push(context.Background(), timeFile, ref, nil); err != nil {
		t.Fatal(err)
	}
	conf := `
[host]
cache_dir = "@CACHE@"

[plugins.clock]
path = "` + ref + `"
startup_timeout = "5m" # a cold compile under -race on a busy machine
`
	h, stop := ociHost(t, conf, cache)
	st := waitState(t, h, "clock", host.StateReady)
	// "(pulled)", or "(cached)" when a first attempt pulled it and timed out.
	if !strings.Contains(st.Source, ref+" → "+timeDigest+" (") || strings.Contains(st.Source, "unreachable") {
		t.Errorf("status source %q, want %s → %s", st.Source, ref, timeDigest)
	}
	res, err := h.CallTool(context.Background(), "clock__current_time", map[string]any{"timezone": "UTC"})
	if err != nil || res.IsError {
		t.Fatalf("clock__current_time = %v, %v", resultString(res), err)
	}
	stop()

	// The tag moves to another plugin: the next start runs it.
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	pushed, err := ociplugin.Push(context.Background(), echo, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, stop = ociHost(t, conf, cache)
	st = waitState(t, h, "clock", host.StateReady)
	if !strings.Contains(st.Source, pushed.Digest) {
		t.Errorf("after the tag moved: source %q, want %s", st.Source, pushed.Digest)
	}
	if res, err := h.CallTool(context.Background(), "clock__echo", map[string]any{"text": "moved"}); err != nil || !strings.Contains(resultString(res), "moved") {
		t.Fatalf("clock__echo after the tag moved = %v, %v", resultString(res), err)
	}
	stop()

	// The registry is down: the last resolution runs, and status says so.
	reg.Stop()
	h, stop = ociHost(t, conf, cache)
	defer stop()
	st = waitState(t, h, "clock", host.StateReady)
	if !strings.Contains(st.Source, pushed.Digest) || !strings.Contains(st.Source, "cached, registry unreachable") {
		t.Errorf("registry stopped: source %q, want %s (cached, registry unreachable)", st.Source, pushed.Digest)
	}
	if res, err := h.CallTool(context.Background(), "clock__echo", map[string]any{"text": "offline"}); err != nil || !strings.Contains(resultString(res), "offline") {
		t.Fatalf("clock__echo offline = %v, %v", resultString(res), err)
	}
}

// TestOCIPluginFailuresAreIsolated: each bad artifact fails its own
// backend with its own error; a good OCI plugin and a file plugin serve.
func TestOCIPluginFailuresAreIsolated(t *testing.T) {
	reg := ocitest.New(t)
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	good, err := ociplugin.Push(context.Background(), echo, reg.Ref("p/good:1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// corrupt's module is unique to this run, so that it is not in the
	// shared cache (a cached module is not downloaded, so not corrupted).
	unique := uniqueModule(t, echo)
	corrupt, err := ociplugin.Push(context.Background(), unique, reg.Ref("p/corrupt:1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ociplugin.Push(context.Background(), echo, reg.Ref("p/pinned:1"), nil); err != nil {
		t.Fatal(err)
	}
	// A wrong media type, and a manifest pointing to a 1 TiB blob.
	cfgDesc := `{"mediaType":"` + ociplugin.MediaTypeWasmConfig + `","digest":"` + reg.PutBlob(t, "p/text", []byte("{}")) + `","size":2}`
	reg.PutBlob(t, "p/huge", []byte("{}"))
	manifest := func(layerType string, size int64) []byte {
		return []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + cfgDesc +
			`,"layers":[{"mediaType":"` + layerType + `","digest":"` + good.Digest + `","size":` + strconv.FormatInt(size, 10) + `}]}`)
	}
	reg.PutManifest(t, "p/text", "1", "application/vnd.oci.image.manifest.v1+json", manifest("text/plain", 100))
	reg.PutManifest(t, "p/huge", "1", "application/vnd.oci.image.manifest.v1+json", manifest(ociplugin.MediaTypeWasmLayer, 1<<40))
	// The registry corrupts one repository's blobs.
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/v2/p/corrupt/blobs/"+corrupt.Digest) {
			b, _ := os.ReadFile(unique)
			b[len(b)-1] ^= 1
			w.Write(b)
			return true
		}
		return false
	})
	h, stop := ociHost(t, `
[host]
cache_dir = "@CACHE@"

[plugins.good]
path = "`+reg.Ref("p/good:1")+`"

[plugins.local]
path = "`+echo+`"

[plugins.corrupt]
path = "`+reg.Ref("p/corrupt:1")+`"
max_restarts = 0

[plugins.pinned]
path = "`+reg.Ref("p/pinned:1")+`"
sha256 = "`+strings.Repeat("0", 64)+`"

[plugins.text]
path = "`+reg.Ref("p/text:1")+`"

[plugins.huge]
path = "`+reg.Ref("p/huge:1")+`"

[plugins.missing]
path = "`+reg.Ref("p/missing:1")+`"
max_restarts = 0
`, sharedCache(t))
	defer stop()
	for _, c := range []struct {
		name string
		want error
	}{
		{"corrupt", ociplugin.ErrDigest},
		{"pinned", ociplugin.ErrPinned},
		{"text", ociplugin.ErrMediaType},
		{"huge", ociplugin.ErrTooLarge},
		{"missing", ociplugin.ErrPull},
	} {
		st := waitState(t, h, c.name, host.StateFailed)
		if !errors.Is(st.Err, c.want) || !errors.Is(st.Err, transport.ErrStart) {
			t.Errorf("%s: error %v, want %v and transport.ErrStart", c.name, st.Err, c.want)
		}
		if st.Source != "" {
			t.Errorf("%s: source %q for a backend that never resolved", c.name, st.Source)
		}
	}
	for _, tool := range []string{"good__echo", "local__echo"} {
		if res, err := h.CallTool(context.Background(), tool, map[string]any{"text": "fine"}); err != nil || !strings.Contains(resultString(res), "fine") {
			t.Errorf("%s = %v, %v", tool, resultString(res), err)
		}
	}
}
