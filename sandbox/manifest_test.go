package sandbox

import (
	"context"
	"errors"
	"go/build"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/transport"
)

// TestNoConfigImport: the sandbox takes its own Manifest; it does not
// import the configuration package (issue 22: one capability grammar, the
// mapping from [plugins.NAME] lives in host).
func TestNoConfigImport(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "github.com/toolhost/toolhost/config" || strings.HasPrefix(imp, "github.com/toolhost/toolhost/host") {
			t.Errorf("package sandbox imports %s", imp)
		}
	}
}

// TestManifestValidate: a Manifest field out of range fails Connect with
// ErrManifest (and transport.ErrStart, permanent), naming the field, before
// anything is read.
func TestManifestValidate(t *testing.T) {
	e := newTestEngine(t)
	path := fixture(t, "echo")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		m    Manifest
		want string
	}{
		{"no-path", Manifest{}, "Path is empty"},
		{"memory", Manifest{Path: path, Capabilities: Capabilities{Memory: -1}}, "Memory is -1 bytes"},
		{"instances", Manifest{Path: path, Instances: -2}, "Instances is -2"},
		{"max-output", Manifest{Path: path, MaxOutput: -1}, "MaxOutput is -1 bytes"},
		{"max-open-files", Manifest{Path: path, MaxOpenFiles: -1}, "MaxOpenFiles is -1"},
		{"max-http-requests", Manifest{Path: path, MaxHTTPRequests: -1}, "MaxHTTPRequests is -1"},
		{"max-http-bytes", Manifest{Path: path, MaxHTTPBytes: -1}, "MaxHTTPBytes is -1 bytes"},
		{"timeout", Manifest{Path: path, Timeout: -time.Second}, "Timeout is -1s"},
		{"isolation", Manifest{Path: path, Isolation: "shared"}, `Isolation is "shared"`},
		{"mount-relative-host", Manifest{Path: path, Capabilities: Capabilities{Mounts: []Mount{{Host: "data", Guest: "/data"}}}}, `Host "data" is not an absolute path`},
		{"mount-relative-guest", Manifest{Path: path, Capabilities: Capabilities{Mounts: []Mount{{Host: dir, Guest: "data"}}}}, `mount "data": Guest is not an absolute path`},
		{"mount-mode", Manifest{Path: path, Capabilities: Capabilities{Mounts: []Mount{{Host: dir, Guest: "/data", Mode: 7}}}}, "Mode is MountMode(7)"},
		{"mount-quota-ro", Manifest{Path: path, Capabilities: Capabilities{Mounts: []Mount{{Host: dir, Guest: "/data", Quota: 1 << 20}}}}, "Quota is set on a read-only mount"},
		{"mount-quota-negative", Manifest{Path: path, Capabilities: Capabilities{Mounts: []Mount{{Host: dir, Guest: "/data", Mode: MountReadWrite, Quota: -1}}}}, "Quota is -1 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Validate(); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want ErrManifest saying %q", err, tc.want)
			}
			tc.m.Name = tc.name
			p := e.Plugin(&tc.m, nil)
			defer p.Close()
			_, err := p.Connect(context.Background())
			for _, want := range []error{ErrManifest, transport.ErrStart, transport.ErrPermanent} {
				if !errors.Is(err, want) {
					t.Errorf("Connect: %v, want it to wrap %v", err, want)
				}
			}
		})
	}
	ok := Manifest{Path: path, Isolation: IsolationFresh, Capabilities: Capabilities{Mounts: []Mount{{Host: dir, Guest: "/out", Mode: MountReadWrite, Quota: 1 << 20}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate of a sound manifest: %v", err)
	}
}

// TestToolCacheKeyOfManifest: the tool-list cache key depends on what the
// guest can observe while listing (memory in pages, config, mounts, hosts)
// and on nothing else of the Manifest.
func TestToolCacheKeyOfManifest(t *testing.T) {
	base := Manifest{Name: "a", Path: "/p.wasm", Config: map[string]string{"k": "v"},
		Capabilities: Capabilities{Hosts: []string{"example.com"}, Mounts: []Mount{{Host: "/srv", Guest: "/data"}}}}
	key := func(m Manifest) string { return m.toolCacheKey("digest", ABIv2) }
	k0 := key(base)
	same := map[string]func(*Manifest){
		"name":        func(m *Manifest) { m.Name = "b" },
		"path":        func(m *Manifest) { m.Path = "/q.wasm" },
		"timeout":     func(m *Manifest) { m.Timeout = time.Minute },
		"instances":   func(m *Manifest) { m.Instances = 3 },
		"isolation":   func(m *Manifest) { m.Isolation = IsolationFresh },
		"limits":      func(m *Manifest) { m.MaxOutput, m.MaxOpenFiles, m.MaxHTTPRequests, m.MaxHTTPBytes = 1, 2, 3, 4 },
		"memory-page": func(m *Manifest) { m.Memory = DefaultMemory - 1 }, // the same pages
	}
	differ := map[string]func(*Manifest){
		"memory":     func(m *Manifest) { m.Memory = 64 << 20 },
		"config":     func(m *Manifest) { m.Config = map[string]string{"k": "w"} },
		"hosts":      func(m *Manifest) { m.Hosts = []string{"example.org"} },
		"mount-mode": func(m *Manifest) { m.Mounts = []Mount{{Host: "/srv", Guest: "/data", Mode: MountReadWrite}} },
		"mount-host": func(m *Manifest) { m.Mounts = []Mount{{Host: "/var", Guest: "/data"}} },
		"abi":        nil,
	}
	for name, f := range same {
		m := base
		f(&m)
		if key(m) != k0 {
			t.Errorf("changing %s changed the key", name)
		}
	}
	for name, f := range differ {
		m := base
		k := m.toolCacheKey("digest", ABIv1)
		if f != nil {
			f(&m)
			k = key(m)
		}
		if k == k0 {
			t.Errorf("changing %s kept the key", name)
		}
	}
}
