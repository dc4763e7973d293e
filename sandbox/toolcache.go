package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/internal/buildinfo"
	"github.com/toolhost/toolhost/transport"
)

// The tool-list cache: a plugin's tools, as its list export gave them, kept
// on disk next to the compiled code so that listing a plugin whose module
// was listed before needs no compile and no instance (docs/PLUGIN-ABI.md,
// "Tool-list cache").
//
// An entry is one file, <key>.json, in the directory ToolCacheDir of the
// compilation cache directory (mode 0700; files 0600, written to a temporary
// file and renamed, so a reader never sees half an entry). Its key is the
// SHA-256 of: the module's SHA-256, the toolhost version (buildinfo.Version
// and the build's VCS revision and dependency versions), the ABI, and what
// of the [plugins.NAME] table the guest can observe (memory cap, config,
// mounts, allowed hosts). An entry is read as untrusted input: one that is
// not a regular file, is larger than MaxToolCacheEntry, does not decode,
// names another key, module or version, or whose tools fail the checks a
// live listing gets is ignored (the plugin is listed live and the entry
// rewritten). The directory keeps at most MaxToolCacheEntries entries and
// MaxToolCacheBytes bytes: writing an entry removes the oldest beyond that.
const (
	// ToolCacheDir is the tool-list cache's directory name inside the
	// compilation cache directory (EngineOptions.CacheDir).
	ToolCacheDir = "toolhost-tools"

	// MaxToolCacheEntry bounds one entry: 8 MiB (a list larger than that is
	// not cached; an entry file larger than that is ignored).
	MaxToolCacheEntry = 8 << 20

	// MaxToolCacheEntries and MaxToolCacheBytes bound the directory.
	MaxToolCacheEntries = 256
	MaxToolCacheBytes   = 64 << 20
)

// toolCacheFormat versions the entry format.
const toolCacheFormat = 1

// toolCache is the tool-list cache of an Engine. A nil *toolCache caches
// nothing.
type toolCache struct {
	dir    string
	logger hclog.Logger
	mu     sync.Mutex // serialises writes and pruning within the process
}

// openToolCache creates (if missing) and checks the cache directory under
// base. It returns nil, logging why, when the directory cannot be used
// safely: not a directory, a symbolic link, owned by another user, or
// writable by group or others (an entry written by someone else must not
// decide what a plugin offers).
func openToolCache(base string, logger hclog.Logger) *toolCache {
	dir := filepath.Join(base, ToolCacheDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logger.Warn("tool-list cache disabled: cannot create its directory", "dir", dir, "error", err)
		return nil
	}
	if err := checkPrivateDir(dir); err != nil {
		logger.Warn("tool-list cache disabled", "dir", dir, "error", err)
		return nil
	}
	return &toolCache{dir: dir, logger: logger}
}

// toolCacheEntry is the JSON of one entry.
type toolCacheEntry struct {
	Format  int             `json:"format"`
	Key     string          `json:"key"`
	Module  string          `json:"module_sha256"`
	Version string          `json:"toolhost"`
	ABI     ABI             `json:"abi"`
	Written time.Time       `json:"written"`
	Tools   json.RawMessage `json:"tools"` // a JSON array of MCP tools
}

var buildVersion = sync.OnceValue(func() string {
	v := "toolhost " + buildinfo.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s %s\n", bi.GoVersion, bi.Main.Path, bi.Main.Version)
	for _, s := range bi.Settings {
		if strings.HasPrefix(s.Key, "vcs.") {
			fmt.Fprintf(h, "%s=%s\n", s.Key, s.Value)
		}
	}
	for _, d := range bi.Deps {
		fmt.Fprintf(h, "%s %s %s\n", d.Path, d.Version, d.Sum)
	}
	return v + " build " + hex.EncodeToString(h.Sum(nil))[:16]
})

// toolCacheKey is the key of the tool list of the module with digest and
// abi run under m: of m, only what the guest can observe while listing its
// tools goes in (its memory in pages, config, mounts, allowed hosts), so
// the name, the limits of a call and the isolation of instances do not
// split the cache.
func (m *Manifest) toolCacheKey(digest string, abi ABI) string {
	type mount struct{ Guest, Host, Mode string }
	var k struct {
		Format  int
		Module  string
		Version string
		ABI     ABI
		Pages   uint32
		Config  map[string]string
		Mounts  []mount
		Hosts   []string
	}
	k.Format, k.Module, k.Version, k.ABI, k.Pages = toolCacheFormat, digest, buildVersion(), abi, m.pages()
	k.Config, k.Hosts = m.Config, m.Hosts
	for _, mt := range m.Mounts {
		// The mode as the key had it before the Manifest: "true" for rw.
		k.Mounts = append(k.Mounts, mount{mt.Guest, mt.Host, fmt.Sprint(mt.Mode == MountReadWrite)})
	}
	b, _ := json.Marshal(k) // map keys sorted: canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// get returns the tools of the entry for key, checked as a live listing
// is, or nil when there is no usable entry.
func (c *toolCache) get(p *Plugin, key, digest string) []byte {
	if c == nil {
		return nil
	}
	b, err := readPrivateFile(filepath.Join(c.dir, key+".json"), MaxToolCacheEntry)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			p.logger.Debug("tool-list cache entry ignored", "key", key, "error", err)
		}
		return nil
	}
	tools, err := parseToolCacheEntry(p, b, key, digest)
	if err != nil {
		p.logger.Debug("tool-list cache entry ignored", "key", key, "error", err)
		return nil
	}
	return tools
}

// parseToolCacheEntry decodes entry b and returns its tools (a JSON array)
// when it was written for key, digest and this build and its tools pass
// the checks of a live listing.
func parseToolCacheEntry(p *Plugin, b []byte, key, digest string) ([]byte, error) {
	var e toolCacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if e.Format != toolCacheFormat || e.Key != key || e.Module != digest || e.Version != buildVersion() {
		return nil, errors.New("written for another key, module or build")
	}
	if _, err := decodeCachedTools(p, e.Tools); err != nil {
		return nil, err
	}
	return e.Tools, nil
}

// decodeCachedTools decodes a cached tool list with the checks a live
// listing gets (checkTools, transport.MaxTools).
func decodeCachedTools(p *Plugin, tools []byte) ([]*mcp.Tool, error) {
	if len(bytes.TrimSpace(tools)) == 0 {
		return nil, errors.New("no tools array")
	}
	wrapped := append(append([]byte(`{"tools":`), tools...), '}')
	res, err := decodeOutput(p, "tool-list cache", wrapped, checkTools)
	if err != nil {
		return nil, err
	}
	var lc transport.ListCap
	if err := lc.Page("tools", len(res.Tools)); err != nil {
		return nil, err
	}
	return res.Tools, nil
}

// put writes the entry for key atomically, then prunes the directory.
// Failures are logged, never returned: the cache only saves time.
func (c *toolCache) put(p *Plugin, key, digest string, abi ABI, tools []*mcp.Tool) {
	if c == nil {
		return
	}
	tb, err := json.Marshal(tools)
	if err != nil {
		return
	}
	b, err := json.Marshal(toolCacheEntry{Format: toolCacheFormat, Key: key, Module: digest, Version: buildVersion(), ABI: abi, Written: time.Now().UTC(), Tools: tb})
	if err != nil || len(b) > MaxToolCacheEntry {
		p.logger.Debug("tool list not cached: larger than the entry limit", "bytes", len(b), "limit", MaxToolCacheEntry)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := writeFileAtomic(filepath.Join(c.dir, key+".json"), b); err != nil {
		p.logger.Debug("tool list not cached", "error", err)
		return
	}
	c.prune()
}

// prune removes the oldest entries (and stray temporary files over a minute
// old) beyond MaxToolCacheEntries and MaxToolCacheBytes. The caller holds
// c.mu.
func (c *toolCache) prune() {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type ent struct {
		name string
		size int64
		mod  time.Time
	}
	var ents []ent
	var total int64
	for _, de := range des {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(de.Name(), ".tmp-") {
			if time.Since(info.ModTime()) > time.Minute {
				_ = os.Remove(filepath.Join(c.dir, de.Name()))
			}
			continue
		}
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		ents = append(ents, ent{de.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].mod.Before(ents[j].mod) })
	for i := 0; i < len(ents) && (len(ents)-i > MaxToolCacheEntries || total > MaxToolCacheBytes); i++ {
		if os.Remove(filepath.Join(c.dir, ents[i].name)) == nil {
			total -= ents[i].size
		}
	}
}

// writeFileAtomic writes b to path through a temporary file (mode 0600) in
// the same directory, synced and renamed over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// readPrivateFile reads path, which must be a regular file (not a symbolic
// link) of at most limit bytes.
func readPrivateFile(path string, limit int64) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than the limit of %d", path, info.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s holds more than the limit of %d bytes", path, limit)
	}
	return b, nil
}
