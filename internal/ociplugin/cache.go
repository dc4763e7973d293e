package ociplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cache is the directory CacheDir/oci:
//
//	sha256/HEX.wasm   a module, named by its SHA-256 (0600)
//	refs/KEY.json     the last resolution of one reference (0600), KEY the
//	                  SHA-256 of the reference as written
//
// Every file is written to a temporary file in its directory and renamed,
// so a reader sees a whole file or none, and concurrent writers (two hosts
// starting at once) each leave a whole file: one resolution per reference
// file means no read-modify-write of a shared index.
type cache struct{ dir string }

// entry is one refs/KEY.json.
type entry struct {
	Ref        string    `json:"ref"`
	Manifest   string    `json:"manifest"`
	Digest     string    `json:"digest"`
	ResolvedAt time.Time `json:"resolved_at"`
}

func (c *cache) refFile(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(c.dir, "refs", hex.EncodeToString(sum[:16])+".json")
}

func (c *cache) modulePath(digest string) string {
	return filepath.Join(c.dir, "sha256", strings.TrimPrefix(digest, "sha256:")+".wasm")
}

// lookup reads the stored resolution of ref. A missing, unreadable or
// malformed file is no resolution.
func (c *cache) lookup(ref string) (entry, bool) {
	b, err := os.ReadFile(c.refFile(ref))
	if err != nil || len(b) > 64<<10 {
		return entry{}, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil || e.Ref != ref || !validDigest(e.Digest) || !validDigest(e.Manifest) {
		return entry{}, false
	}
	return e, true
}

func (c *cache) result(e entry) *Result {
	return &Result{Ref: e.Ref, Manifest: e.Manifest, Digest: e.Digest, Path: c.modulePath(e.Digest), ResolvedAt: e.ResolvedAt}
}

// reuse returns the cached module of e after checking it against the pin
// and re-hashing it (a cache file changed on disk is ErrDigest).
func (c *cache) reuse(e entry, pin string) (*Result, error) {
	if pin != "" && pin != e.Digest {
		return nil, fmt.Errorf("%s resolves to module %s, the config pins %s: %w", e.Ref, e.Digest, pin, ErrPinned)
	}
	res := c.result(e)
	f, err := os.Open(res.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCache, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrCache, res.Path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != e.Digest {
		return nil, fmt.Errorf("cached module %s has %s: %w (delete it; it is pulled again)", res.Path, got, ErrDigest)
	}
	return res, nil
}

// has reports whether the module digest is cached with the right content.
func (c *cache) has(digest string) bool {
	_, err := c.reuse(entry{Digest: digest}, "")
	return err == nil
}

// store records e as the resolution of e.Ref.
func (c *cache) store(e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return c.writeFile(c.refFile(e.Ref), func(w io.Writer) error { _, err := w.Write(b); return err })
}

// writeFile writes path atomically (0600, directories 0700) with write.
func (c *cache) writeFile(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w (set [host] cache_dir to a writable directory)", ErrCache, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("%w: %w (set [host] cache_dir to a writable directory)", ErrCache, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%w: %w", ErrCache, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrCache, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %w", ErrCache, err)
	}
	return nil
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// normalizePin turns a sha256 pin (64 hex digits, optionally "sha256:")
// into a digest string "sha256:hex"; "" stays "".
func normalizePin(pin string) string {
	pin = strings.ToLower(strings.TrimSpace(pin))
	if pin == "" {
		return ""
	}
	return "sha256:" + strings.TrimPrefix(pin, "sha256:")
}
