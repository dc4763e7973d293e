package ociplugin_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/internal/ociplugin"
	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
	"github.com/toolhost/toolhost/internal/ociplugin/ocitest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plugin reads one of our built plugins (make plugins).
func plugin(t *testing.T, name string) (path string, b []byte, digest string) {
	t.Helper()
	path = filepath.Join("..", "..", "plugins", name+".wasm")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%v: run make plugins", err)
	}
	sum := sha256.Sum256(b)
	return path, b, "sha256:" + hex.EncodeToString(sum[:])
}

func opts(t *testing.T) *ociplugin.Options {
	return &ociplugin.Options{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain()}
}

func push(t *testing.T, file, ref string, o *ociplugin.Options) *ociplugin.Pushed {
	t.Helper()
	p, err := ociplugin.Push(context.Background(), file, ref, o)
	if err != nil {
		t.Fatalf("push %s %s: %v", file, ref, err)
	}
	return p
}

func TestPushPullCachesByDigest(t *testing.T) {
	reg := ocitest.New(t)
	file, wasm, digest := plugin(t, "time")
	o := opts(t)
	ref := reg.Ref("plugins/time:1")
	p := push(t, file, ref, o)
	if p.Digest != digest || p.Size != int64(len(wasm)) {
		t.Fatalf("pushed %+v, want digest %s", p, digest)
	}
	// The same module pushed again has the same manifest digest.
	if p2 := push(t, file, reg.Ref("plugins/time:again"), o); p2.Manifest != p.Manifest {
		t.Errorf("manifest digest %s then %s: pushes are not reproducible", p.Manifest, p2.Manifest)
	}

	res, err := ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pulled || res.Offline || res.Digest != digest || res.Manifest != p.Manifest {
		t.Fatalf("pull = %+v, want pulled %s", res, digest)
	}
	want := filepath.Join(o.CacheDir, "oci", "sha256", strings.TrimPrefix(digest, "sha256:")+".wasm")
	if res.Path != want {
		t.Errorf("path %s, want %s", res.Path, want)
	}
	fi, err := os.Stat(res.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, wasm) {
		t.Fatal("cached module differs from the pushed file")
	}
	if s := res.Status(); !strings.Contains(s, digest) || !strings.Contains(s, "(pulled)") {
		t.Errorf("Status() = %q", s)
	}

	// A second pull resolves the tag but downloads nothing.
	var blobs atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/blobs/") {
			blobs.Add(1)
		}
		return false
	})
	res, err = ociplugin.Pull(context.Background(), ref, strings.TrimPrefix(digest, "sha256:"), o)
	if err != nil || res.Pulled || res.Offline {
		t.Fatalf("second pull = %+v, %v; want cached", res, err)
	}
	if n := blobs.Load(); n != 0 {
		t.Errorf("second pull fetched %d blobs", n)
	}

	// By digest: resolved once, then never asked again (content cannot change).
	byDigest := reg.Ref("plugins/time@" + p.Manifest)
	if _, err := ociplugin.Pull(context.Background(), byDigest, "", o); err != nil {
		t.Fatal(err)
	}
	reg.Stop()
	res, err = ociplugin.Pull(context.Background(), byDigest, "", o)
	if err != nil || res.Offline || res.Digest != digest {
		t.Fatalf("pull by digest with the registry stopped = %+v, %v; want the cached module, not offline", res, err)
	}
	if c, ok := ociplugin.Cached(ref, o); !ok || c.Digest != digest {
		t.Errorf("Cached(%s) = %+v, %v", ref, c, ok)
	}
}

func TestTagMoveIsPickedUp(t *testing.T) {
	reg := ocitest.New(t)
	o := opts(t)
	ref := reg.Ref("plugins/tool:stable")
	timeFile, _, timeDigest := plugin(t, "time")
	fsFile, _, fsDigest := plugin(t, "fs")
	push(t, timeFile, ref, o)
	res, err := ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || res.Digest != timeDigest {
		t.Fatalf("first pull = %+v, %v", res, err)
	}
	push(t, fsFile, ref, o)
	res, err = ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || res.Digest != fsDigest || !res.Pulled {
		t.Fatalf("pull after the tag moved = %+v, %v; want %s", res, err, fsDigest)
	}
	// Offline, the last resolution (the moved tag) is used.
	reg.Stop()
	res, err = ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || !res.Offline || res.Digest != fsDigest {
		t.Fatalf("offline pull = %+v, %v; want %s offline", res, err, fsDigest)
	}
}

func TestRegistryDown(t *testing.T) {
	reg := ocitest.New(t)
	o := opts(t)
	file, _, digest := plugin(t, "time")
	ref := reg.Ref("plugins/time:1")
	push(t, file, ref, o)
	if _, err := ociplugin.Pull(context.Background(), ref, "", o); err != nil {
		t.Fatal(err)
	}

	// A registry answering 503 is unreachable: the cache is used.
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return true
	})
	res, err := ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || !res.Offline || res.Reason == nil || res.Digest != digest {
		t.Fatalf("pull from a 503 registry = %+v, %v; want offline", res, err)
	}
	// 404 is an answer, not an outage: no fallback.
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"gone"}]}`, http.StatusNotFound)
			return true
		}
		return false
	})
	if _, err := ociplugin.Pull(context.Background(), ref, "", o); !errors.Is(err, ociplugin.ErrPull) {
		t.Fatalf("pull of a removed tag = %v, want ErrPull", err)
	}
	reg.Intercept(nil)

	reg.Stop()
	res, err = ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || !res.Offline || res.Digest != digest {
		t.Fatalf("pull from a stopped registry = %+v, %v; want offline", res, err)
	}
	if s := res.Status(); !strings.Contains(s, "cached, registry unreachable") {
		t.Errorf("Status() = %q", s)
	}
	// Pinned to something else: refused even offline.
	if _, err := ociplugin.Pull(context.Background(), ref, strings.Repeat("ab", 32), o); !errors.Is(err, ociplugin.ErrPinned) {
		t.Errorf("offline pull with a wrong pin = %v, want ErrPinned", err)
	}
	// A reference never pulled has nothing to fall back to.
	_, err = ociplugin.Pull(context.Background(), reg.Ref("plugins/other:1"), "", o)
	if !errors.Is(err, ociplugin.ErrPull) {
		t.Fatalf("pull of an uncached ref from a stopped registry = %v, want ErrPull", err)
	}
	// A cached module changed on disk is not run.
	if err := os.WriteFile(res.Path, []byte("\x00asm tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ociplugin.Pull(context.Background(), ref, "", o); !errors.Is(err, ociplugin.ErrDigest) || !errors.Is(err, ociplugin.ErrPull) {
		t.Fatalf("offline pull of a tampered cache = %v, want ErrPull and ErrDigest", err)
	}
}

func TestPinMismatch(t *testing.T) {
	reg := ocitest.New(t)
	o := opts(t)
	file, _, digest := plugin(t, "time")
	ref := reg.Ref("plugins/time:1")
	push(t, file, ref, o)
	_, err := ociplugin.Pull(context.Background(), ref, strings.Repeat("0", 64), o)
	if !errors.Is(err, ociplugin.ErrPinned) {
		t.Fatalf("pull with a wrong pin = %v, want ErrPinned", err)
	}
	if _, ok := ociplugin.Cached(ref, o); ok {
		t.Error("a module refused by its pin was recorded")
	}
	if _, err := ociplugin.Pull(context.Background(), ref, strings.ToUpper(strings.TrimPrefix(digest, "sha256:")), o); err != nil {
		t.Fatalf("pull with the right pin (upper case): %v", err)
	}
}

// manifestJSON is an OCI image manifest with the given layers.
func manifestJSON(t *testing.T, config map[string]any, layers ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        config,
		"layers":        layers,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func desc(mt, digest string, size int) map[string]any {
	return map[string]any{"mediaType": mt, "digest": digest, "size": size}
}

func tarGz(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// TestHostileRegistry: each way an artifact or a registry can be wrong is
// its own error, and nothing is cached.
func TestHostileRegistry(t *testing.T) {
	reg := ocitest.New(t)
	_, wasm, wasmDigest := plugin(t, "time")
	const repo = "plugins/h"
	cfg := desc(ociplugin.MediaTypeWasmConfig, reg.PutBlob(t, repo, []byte("{}")), 2)
	layer := desc(ociplugin.MediaTypeWasmLayer, reg.PutBlob(t, repo, wasm), len(wasm))
	put := func(tag string, layers ...map[string]any) string {
		reg.PutManifest(t, repo, tag, "application/vnd.oci.image.manifest.v1+json", manifestJSON(t, cfg, layers...))
		return reg.Ref(repo + ":" + tag)
	}
	notWasm := []byte("#!/bin/sh\necho not a module\n")
	bomb := tarGz(t, map[string][]byte{"plugin.wasm": append([]byte("\x00asm"), make([]byte, 8<<20)...)})
	var blobGets atomic.Int32

	for _, tc := range []struct {
		name    string
		ref     func() string
		hook    func(w http.ResponseWriter, r *http.Request) bool
		max     int64
		wantErr error
	}{
		{name: "corrupted blob", ref: func() string { return put("good", layer) },
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/blobs/"+wasmDigest) {
					return false
				}
				bad := bytes.Clone(wasm)
				bad[len(bad)/2] ^= 0xff
				w.Write(bad)
				return true
			}, wantErr: ociplugin.ErrDigest},
		{name: "short blob", ref: func() string { return put("good", layer) },
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/blobs/"+wasmDigest) {
					return false
				}
				w.Write(wasm[:100])
				return true
			}, wantErr: ociplugin.ErrDigest},
		{name: "wrong layer media type", ref: func() string {
			return put("text", desc("text/plain", layer["digest"].(string), len(wasm)))
		}, wantErr: ociplugin.ErrMediaType},
		{name: "no layers", ref: func() string { return put("empty") }, wantErr: ociplugin.ErrMediaType},
		{name: "two wasm layers", ref: func() string { return put("two", layer, layer) }, wantErr: ociplugin.ErrMediaType},
		{name: "wasm layer that is not wasm", ref: func() string {
			return put("script", desc(ociplugin.MediaTypeWasmLayer, reg.PutBlob(t, repo, notWasm), len(notWasm)))
		}, wantErr: ociplugin.ErrMediaType},
		{name: "manifest pointing to a huge blob", ref: func() string {
			return put("huge", desc(ociplugin.MediaTypeWasmLayer, wasmDigest, 1<<40))
		}, hook: func(w http.ResponseWriter, r *http.Request) bool {
			if strings.Contains(r.URL.Path, "/blobs/sha256:") {
				blobGets.Add(1)
			}
			return false
		}, wantErr: ociplugin.ErrTooLarge},
		{name: "layer over the limit", ref: func() string { return put("good", layer) }, max: 1 << 20, wantErr: ociplugin.ErrTooLarge},
		{name: "huge manifest", ref: func() string { return put("good", layer) },
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				w.Write([]byte(`{"schemaVersion":2,"pad":"`))
				chunk := bytes.Repeat([]byte("x"), 64<<10)
				for range 100 { // 6.4 MiB, chunked: no Content-Length
					if _, err := w.Write(chunk); err != nil {
						break
					}
				}
				return true
			}, wantErr: ociplugin.ErrTooLarge},
		{name: "manifest not JSON", ref: func() string { return put("good", layer) },
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				w.Write([]byte("<html>"))
				return true
			}, wantErr: ociplugin.ErrMediaType},
		{name: "gzip bomb in an image layer", ref: func() string {
			return put("bomb", desc("application/vnd.oci.image.layer.v1.tar+gzip", reg.PutBlob(t, repo, bomb), len(bomb)))
		}, max: 4 << 20, wantErr: ociplugin.ErrTooLarge},
		{name: "image layer unpacking past the limit", ref: func() string {
			l := tarGz(t, map[string][]byte{"a.bin": make([]byte, 3<<20), "b.bin": make([]byte, 3<<20), "plugin.wasm": wasm[:64]})
			return put("spread", desc("application/vnd.oci.image.layer.v1.tar+gzip", reg.PutBlob(t, repo, l), len(l)))
		}, max: 4 << 20, wantErr: ociplugin.ErrTooLarge},
		{name: "image layer without wasm", ref: func() string {
			l := tarGz(t, map[string][]byte{"etc/passwd": []byte("root:x:0:0")})
			return put("nowasm", desc("application/vnd.oci.image.layer.v1.tar+gzip", reg.PutBlob(t, repo, l), len(l)))
		}, wantErr: ociplugin.ErrMediaType},
		{name: "unknown tag", ref: func() string { return reg.Ref(repo + ":nope") }, wantErr: ociplugin.ErrPull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(t)
			o.MaxLayer = tc.max
			ref := tc.ref()
			reg.Intercept(tc.hook)
			defer reg.Intercept(nil)
			blobGets.Store(0)
			res, err := ociplugin.Pull(context.Background(), ref, "", o)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Pull = %+v, %v; want %v", res, err, tc.wantErr)
			}
			t.Logf("error: %v", err)
			for _, other := range []error{ociplugin.ErrDigest, ociplugin.ErrMediaType, ociplugin.ErrTooLarge, ociplugin.ErrPull, ociplugin.ErrPinned} {
				if other != tc.wantErr && errors.Is(err, other) {
					t.Errorf("error also wraps %v", other)
				}
			}
			if n := blobGets.Load(); n != 0 {
				t.Errorf("%d blob requests for an oversized descriptor", n)
			}
			if _, ok := ociplugin.Cached(ref, o); ok {
				t.Error("a refused artifact was recorded in the cache")
			}
			if left, _ := filepath.Glob(filepath.Join(o.CacheDir, "oci", "sha256", "*")); len(left) > 0 {
				t.Errorf("left in the cache: %v", left)
			}
		})
	}
}

// TestHyperMCPImageLayout: an image whose layer holds /plugin.wasm (how
// hyper-mcp's plugins are published), behind an index, is pulled.
func TestHyperMCPImageLayout(t *testing.T) {
	reg := ocitest.New(t)
	_, wasm, digest := plugin(t, "time")
	const repo = "tuananh/time-plugin"
	l := tarGz(t, map[string][]byte{"plugin.wasm": wasm, "README.wasm": []byte("\x00asm decoy")})
	cfg := desc("application/vnd.oci.image.config.v1+json", reg.PutBlob(t, repo, []byte(`{"architecture":"amd64","os":"linux"}`)), 37)
	man := manifestJSON(t, cfg, desc("application/vnd.oci.image.layer.v1.tar+gzip", reg.PutBlob(t, repo, l), len(l)))
	reg.PutManifest(t, repo, "amd64", "application/vnd.oci.image.manifest.v1+json", man)
	sum := sha256.Sum256(man)
	idx, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{
			{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(man),
				"platform": map[string]string{"architecture": "amd64", "os": "linux"}},
		},
	})
	reg.PutManifest(t, repo, "latest", "application/vnd.oci.image.index.v1+json", idx)
	res, err := ociplugin.Pull(context.Background(), reg.Ref(repo+":latest"), "", opts(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != digest {
		t.Fatalf("module digest %s, want plugin.wasm's %s", res.Digest, digest)
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, name string
		ok       bool
	}{
		{"oci://ghcr.io/tuananh/time-plugin:1.0", "ghcr.io/tuananh/time-plugin:1.0", true},
		{"oci://ghcr.io/a/b@sha256:" + strings.Repeat("a", 64), "ghcr.io/a/b@sha256:" + strings.Repeat("a", 64), true},
		{"oci+http://127.0.0.1:5000/p/t:1", "127.0.0.1:5000/p/t:1", true},
		{"oci+http://localhost:5000/p/t:1", "localhost:5000/p/t:1", true},
		{"oci+http://[::1]:5000/p/t:1", "[::1]:5000/p/t:1", true},
		{"oci+http://registry.example.com/p/t:1", "", false}, // plain HTTP off loopback
		{"oci+http://10.0.0.1:5000/p/t:1", "", false},
		{"oci://ghcr.io/a/b", "", false},            // no tag
		{"oci://tuananh/time:1", "", false},         // no registry
		{"oci://ghcr.io/A/b:1", "", false},          // upper case repository
		{"oci://ghcr.io/a/b@sha256:abc", "", false}, // short digest
		{"https://ghcr.io/a/b:1", "", false},
		{"oci://", "", false},
	} {
		r, err := ociref.Parse(tc.in)
		if tc.ok != (err == nil) || tc.ok && r.Name() != tc.name {
			t.Errorf("Parse(%q) = %+v, %v; want ok %v name %q", tc.in, r, err, tc.ok, tc.name)
		}
		if err != nil && !errors.Is(err, ociref.ErrRef) {
			t.Errorf("Parse(%q) error %v does not wrap ErrRef", tc.in, err)
		}
	}
}

func TestPushRefusesWhatIsNotAModule(t *testing.T) {
	reg := ocitest.New(t)
	f := filepath.Join(t.TempDir(), "x.wasm")
	os.WriteFile(f, []byte("#!/bin/sh\n"), 0o600)
	if _, err := ociplugin.Push(context.Background(), f, reg.Ref("p/x:1"), opts(t)); !errors.Is(err, ociplugin.ErrMediaType) {
		t.Fatalf("push of a script = %v, want ErrMediaType", err)
	}
	file, _, _ := plugin(t, "time")
	if _, err := ociplugin.Push(context.Background(), file, "oci://"+reg.Host+"/p/x:1", opts(t)); !errors.Is(err, ociref.ErrRef) {
		t.Fatalf("push over https to a plain HTTP loopback registry = %v, want ErrRef (plain HTTP refused)", err)
	}
}

// TestSlowRegistry: a registry that accepts the connection and never
// answers is unreachable after Options.Timeout (the cached module runs),
// and Close of a Transport stuck in its pull ends it at once.
func TestSlowRegistry(t *testing.T) {
	reg := ocitest.New(t)
	o := opts(t)
	file, _, digest := plugin(t, "time")
	ref := reg.Ref("plugins/time:1")
	push(t, file, ref, o)
	if _, err := ociplugin.Pull(context.Background(), ref, "", o); err != nil {
		t.Fatal(err)
	}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		reg.Stall(r) // until the client gives up
		return true
	})
	o.Timeout = 300 * time.Millisecond
	res, err := ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || !res.Offline || res.Digest != digest {
		t.Fatalf("pull from a stalled registry = %+v, %v; want the cached module, offline", res, err)
	}

	o.Timeout = time.Hour
	// Counted apart: the stalled pull above may still hold a request in
	// Stall until the registry sees that its client has gone.
	var reached atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		reached.Add(1)
		reg.Stall(r)
		return true
	})
	tr := &ociplugin.Transport{Ref: reg.Ref("plugins/other:1"), Options: o,
		Build: func(string, string) transport.Transport { t.Error("built a plugin"); return nil }}
	done := make(chan error, 1)
	go func() { _, err := tr.Connect(context.Background()); done <- err }()
	// Close once the pull is under way (a request of it is stalled).
	testutil.Eventually(t, 10*time.Second, func() bool { return reached.Load() > 0 }, "no request reached the registry")
	tr.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ociplugin.ErrPull) || !errors.Is(err, transport.ErrStart) {
			t.Errorf("Connect after Close = %v, want ErrPull and transport.ErrStart", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Connect did not return after Close")
	}
	if _, err := tr.ListTools(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("ListTools after Close = %v, want ErrClosed", err)
	}
}

// TestDockerConfigCredentials: a registry that wants Basic credentials
// gets those of the Docker configuration ($DOCKER_CONFIG/config.json),
// through the default keychain; without them, the pull is refused
// (ErrPull, no fallback: the registry answered).
func TestDockerConfigCredentials(t *testing.T) {
	reg := ocitest.New(t)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if u, p, ok := r.BasicAuth(); ok && u == "robot" && p == "s3cret" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"credentials required"}]}`, http.StatusUnauthorized)
		return true
	})
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	o := &ociplugin.Options{CacheDir: t.TempDir()} // default keychain
	file, _, digest := plugin(t, "time")
	ref := reg.Ref("private/time:1")
	if _, err := ociplugin.Push(context.Background(), file, ref, o); !errors.Is(err, ociplugin.ErrPull) {
		t.Fatalf("push without credentials = %v, want ErrPull", err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	cfg := `{"auths":{"` + reg.Host + `":{"auth":"` + auth + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	push(t, file, ref, o)
	res, err := ociplugin.Pull(context.Background(), ref, "", o)
	if err != nil || res.Digest != digest {
		t.Fatalf("pull with credentials = %+v, %v", res, err)
	}
	os.Remove(filepath.Join(dir, "config.json"))
	if _, err := ociplugin.Pull(context.Background(), ref, "", o); !errors.Is(err, ociplugin.ErrPull) {
		t.Fatalf("pull without credentials = %v, want ErrPull (not the cached module)", err)
	}
}
