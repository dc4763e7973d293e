package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// toolCacheEnv is an Engine whose compilation cache is the package's shared
// one (warm) and whose tool-list cache starts empty: the Engine's tool
// cache directory is replaced by a fresh one.
func toolCacheEngine(t *testing.T) *Engine {
	t.Helper()
	e := newTestEngine(t)
	e.tools = openToolCache(t.TempDir(), e.logger)
	if e.tools == nil {
		t.Fatal("tool-list cache not opened")
	}
	return e
}

// connectFrom connects a plugin for cfg (a copy) and reports whether its
// tools came from the tool-list cache (nothing compiled).
func connectFrom(t *testing.T, e *Engine, cfg Manifest, opts *PluginOptions) (p *Plugin, cached bool) {
	t.Helper()
	p = e.Plugin(&cfg, opts)
	if _, err := p.Connect(context.Background()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	p.mu.Lock()
	cached = p.cachedTools != nil
	p.mu.Unlock()
	return p, cached
}

func toolNames(t *testing.T, p *Plugin) []string {
	t.Helper()
	tools, err := p.ListTools(context.Background())
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func entryPath(e *Engine, p *Plugin) string {
	return filepath.Join(e.tools.dir, p.cacheKey+".json")
}

// TestToolCacheHit: the first Connect lists live and ListTools writes the
// entry (0600 in a 0700 directory); a second Plugin of the same module and
// configuration lists the same tools with nothing compiled and no
// instance, and compiles at its first call.
func TestToolCacheHit(t *testing.T) {
	e := toolCacheEngine(t)
	cfg := Manifest{Name: "echo", Path: fixture(t, "echo")}
	p1, cached := connectFrom(t, e, cfg, nil)
	if cached {
		t.Fatal("first Connect used an empty cache")
	}
	want := toolNames(t, p1)
	info, err := os.Stat(entryPath(e, p1))
	if err != nil {
		t.Fatalf("no entry after the first listing: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v, want 0600", info.Mode().Perm())
	}
	if info, err := os.Stat(e.tools.dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("cache dir: %v, mode %v, want 0700", err, info.Mode().Perm())
	}

	p2, cached := connectFrom(t, e, cfg, &PluginOptions{LazyInstances: true})
	if !cached {
		t.Fatal("second Connect did not use the cache")
	}
	if got := toolNames(t, p2); !slices.Equal(got, want) {
		t.Errorf("cached tools %q, want %q", got, want)
	}
	p2.mu.Lock()
	compiled, idle := p2.compiled, len(p2.idle)
	p2.mu.Unlock()
	if compiled != nil || idle != 0 {
		t.Fatalf("a listing from the cache compiled (%v) or made %d instances", compiled != nil, idle)
	}
	if got := callText(t, p2, "echo", map[string]any{"text": "lazy"}); got != "lazy" {
		t.Errorf("first call after a cached Connect: %q", got)
	}
}

// TestToolCacheBackgroundWarm: without LazyInstances, a Connect from the
// cache compiles and warms one instance in the background.
func TestToolCacheBackgroundWarm(t *testing.T) {
	e := toolCacheEngine(t)
	cfg := Manifest{Name: "echo", Path: fixture(t, "echo")}
	p1, _ := connectFrom(t, e, cfg, nil)
	toolNames(t, p1)
	p2, cached := connectFrom(t, e, cfg, nil)
	if !cached {
		t.Fatal("second Connect did not use the cache")
	}
	p2.ops.Wait() // the warm-up is an operation of its own
	p2.mu.Lock()
	compiled, idle := p2.compiled, len(p2.idle)
	p2.mu.Unlock()
	if compiled == nil || idle != 1 {
		t.Fatalf("after the background warm-up: compiled %v, %d idle instances; want compiled and 1", compiled != nil, idle)
	}
	if got := callText(t, p2, "echo", map[string]any{"text": "warm"}); got != "warm" {
		t.Errorf("call: %q", got)
	}
}

// TestToolCacheMiss: a changed module, a changed configuration, and
// RefreshToolCache each make Connect list live.
func TestToolCacheMiss(t *testing.T) {
	e := toolCacheEngine(t)
	path := filepath.Join(t.TempDir(), "plugin.wasm")
	copyFile(t, fixture(t, "echo"), path)
	cfg := Manifest{Name: "p", Path: path}
	p1, _ := connectFrom(t, e, cfg, nil)
	echoTools := toolNames(t, p1)

	t.Run("changed module", func(t *testing.T) {
		copyFile(t, fixture(t, "counter"), path)
		p, cached := connectFrom(t, e, cfg, nil)
		if cached {
			t.Fatal("a changed module was listed from the cache")
		}
		if got := toolNames(t, p); slices.Equal(got, echoTools) {
			t.Errorf("the changed module lists the old module's tools %q", got)
		}
		copyFile(t, fixture(t, "echo"), path)
	})
	t.Run("changed config", func(t *testing.T) {
		c := cfg
		c.Config = map[string]string{"echo_prefix": "> "}
		if _, cached := connectFrom(t, e, c, nil); cached {
			t.Fatal("a changed [plugins.NAME] config was listed from the cache")
		}
		c = cfg
		c.Memory = 128 << 20
		if _, cached := connectFrom(t, e, c, nil); cached {
			t.Fatal("a changed memory cap was listed from the cache")
		}
	})
	t.Run("refresh", func(t *testing.T) {
		if _, cached := connectFrom(t, e, cfg, &PluginOptions{RefreshToolCache: true}); cached {
			t.Fatal("RefreshToolCache read the cache")
		}
		if _, cached := connectFrom(t, e, cfg, nil); !cached {
			t.Fatal("the unchanged module was not listed from the cache")
		}
	})
}

// TestToolCacheHostileEntry: an entry that is corrupt, oversized, a
// symbolic link, written for another key, or whose tools fail the checks
// of a live listing is ignored (Connect lists live) and rewritten.
func TestToolCacheHostileEntry(t *testing.T) {
	e := toolCacheEngine(t)
	cfg := Manifest{Name: "echo", Path: fixture(t, "echo")}
	p, _ := connectFrom(t, e, cfg, nil)
	want := toolNames(t, p)
	entry := entryPath(e, p)
	good, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, good, 0o600); err != nil {
		t.Fatal(err)
	}
	key := p.cacheKey
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T)
	}{
		{"garbage", func(t *testing.T) { writeEntry(t, entry, []byte("\x00not json{")) }},
		{"truncated", func(t *testing.T) { writeEntry(t, entry, good[:len(good)/2]) }},
		{"oversized", func(t *testing.T) {
			writeEntry(t, entry, good)
			if err := os.Truncate(entry, MaxToolCacheEntry+1); err != nil {
				t.Fatal(err)
			}
		}},
		{"another key", func(t *testing.T) {
			writeEntry(t, entry, []byte(strings.Replace(string(good), key, strings.Repeat("0", 64), 1)))
		}},
		{"another module", func(t *testing.T) {
			writeEntry(t, entry, []byte(strings.Replace(string(good), `"module_sha256":"`, `"module_sha256":"0`, 1)))
		}},
		{"tool without a name", func(t *testing.T) {
			writeEntry(t, entry, []byte(strings.Replace(string(good), `"name":"echo"`, `"name":""`, 1)))
		}},
		{"tools not an array", func(t *testing.T) {
			s := string(good)
			i := strings.Index(s, `"tools":`)
			writeEntry(t, entry, []byte(s[:i]+`"tools":{"a":1}}`))
		}},
		{"symbolic link", func(t *testing.T) {
			_ = os.Remove(entry)
			if err := os.Symlink(other, entry); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.spoil(t)
			p, cached := connectFrom(t, e, cfg, nil)
			if cached {
				t.Fatal("a spoilt entry was used")
			}
			if got := toolNames(t, p); !slices.Equal(got, want) {
				t.Errorf("tools %q, want %q", got, want)
			}
			if info, err := os.Lstat(entry); err != nil || !info.Mode().IsRegular() || info.Size() > MaxToolCacheEntry {
				t.Fatalf("the entry was not rewritten: %v %v", info, err)
			}
			if _, cached := connectFrom(t, e, cfg, nil); !cached {
				t.Fatal("the rewritten entry is not used")
			}
		})
	}
}

// TestToolCacheUnsafeDir: a cache directory writable by others is not
// used.
func TestToolCacheUnsafeDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, ToolCacheDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t)
	if c := openToolCache(base, e.logger); c != nil {
		t.Fatal("a world-writable tool-list cache directory was used")
	}
}

// TestToolCachePrune: the directory keeps at most MaxToolCacheEntries
// entries, removing the oldest.
func TestToolCachePrune(t *testing.T) {
	e := toolCacheEngine(t)
	old := time.Now().Add(-time.Hour)
	for i := range MaxToolCacheEntries + 5 {
		f := filepath.Join(e.tools.dir, fmt.Sprintf("%064d.json", i))
		writeEntry(t, f, []byte("{}"))
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Manifest{Name: "echo", Path: fixture(t, "echo")}
	p, _ := connectFrom(t, e, cfg, nil)
	toolNames(t, p)
	des, err := os.ReadDir(e.tools.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(des) > MaxToolCacheEntries {
		t.Errorf("%d entries, want at most %d", len(des), MaxToolCacheEntries)
	}
	if _, err := os.Stat(entryPath(e, p)); err != nil {
		t.Errorf("the newest entry was pruned: %v", err)
	}
}

// TestToolCacheClosed: ListTools of a Plugin connected from the cache
// fails with ErrClosed once closed, as a live one does.
func TestToolCacheClosed(t *testing.T) {
	e := toolCacheEngine(t)
	cfg := Manifest{Name: "echo", Path: fixture(t, "echo")}
	p1, _ := connectFrom(t, e, cfg, nil)
	toolNames(t, p1)
	p2, cached := connectFrom(t, e, cfg, nil)
	if !cached {
		t.Fatal("not from the cache")
	}
	p2.Close()
	if _, err := p2.ListTools(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("ListTools after Close: %v", err)
	}
	if _, err := p2.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("CallTool after Close: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeEntry(t *testing.T, path string, b []byte) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzToolCacheEntry: any entry bytes are either refused or yield tools
// that pass a live listing's checks; nothing panics.
func FuzzToolCacheEntry(f *testing.F) {
	key, digest := strings.Repeat("a", 64), strings.Repeat("b", 64)
	p := &Plugin{name: "fuzz", logger: hclog.NewNullLogger()}
	valid := func(tools string) []byte {
		return []byte(`{"format":1,"key":"` + key + `","module_sha256":"` + digest + `","toolhost":` + strconv.Quote(buildVersion()) + `,"abi":"v2","tools":` + tools + `}`)
	}
	f.Add(valid(`[{"name":"echo","inputSchema":{"type":"object"}}]`))
	f.Add(valid(`[{"name":"a"},{"name":"a"}]`))
	f.Add(valid(`[null]`))
	f.Add(valid(`{}`))
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, err := parseToolCacheEntry(p, b, key, digest)
		if err != nil {
			return
		}
		list, err := decodeCachedTools(p, tools)
		if err != nil {
			t.Fatalf("accepted tools fail the checks: %v", err)
		}
		seen := map[string]bool{}
		for _, tl := range list {
			if tl == nil || tl.Name == "" || seen[tl.Name] || tl.InputSchema == nil {
				t.Fatalf("accepted a bad tool list: %s", tools)
			}
			seen[tl.Name] = true
		}
		if len(list) > transport.MaxTools {
			t.Fatalf("accepted %d tools", len(list))
		}
	})
}
