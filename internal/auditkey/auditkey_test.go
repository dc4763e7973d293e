package auditkey

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestLoadOrCreateConcurrent: of many processes' first use at once, one key
// wins and every caller gets it (no half-written key is ever read).
func TestLoadOrCreateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolhost", "audit.key")
	keys := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != Size || !bytes.Equal(k, keys[0]) {
			t.Fatalf("keys differ: %x %x", k, keys[0])
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestSymlinkedDirectoryRefused: a key directory that is a symbolic link
// (someone else's directory) is refused; Rotate replaces a symbolic link
// key file itself, never writing through it.
func TestSymlinkedDirectoryRefused(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "toolhost")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(filepath.Join(link, "audit.key")); !errors.Is(err, ErrInsecure) {
		t.Errorf("LoadOrCreate in a symlinked directory: %v, want ErrInsecure", err)
	}

	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "audit.key")
	if err := os.Symlink(target, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Rotate(key); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("Rotate wrote through the symbolic link: %q", b)
	}
	if k, err := Load(key); err != nil || len(k) != Size {
		t.Errorf("after Rotate: %v", err)
	}
}
