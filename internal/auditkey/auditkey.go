// Package auditkey keeps the key of the audit log's argument hashes
// (host.AuditRecord.ArgsHMAC, an HMAC-SHA-256, RFC 2104): 32 random bytes,
// written as 64 hex digits and a newline in a file of mode 0600, in a
// directory of mode 0700, owned by the user who runs toolhost.
//
// A file that another user could have written or can read is refused, never
// used: a symbolic link, not a regular file, owned by another user, or with
// any group or other permission bit; so is a directory that is a symbolic
// link, owned by another user, or writable by group or others. Keys are
// written atomically (a temporary file in the same directory, then a link
// or a rename), so concurrent processes never read half a key and the
// first to create one wins.
package auditkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Size is the length of a key in bytes (the output size of SHA-256, as RFC
// 2104 section 3 recommends).
const Size = 32

// Errors.
var (
	// ErrInsecure: the key file or its directory could be read or written
	// by another user; the message says which and how to fix it.
	ErrInsecure = errors.New("audit key is not private")
	// ErrMalformed: the key file does not hold 64 hex digits.
	ErrMalformed = errors.New("audit key file is malformed")
)

// DefaultPath is where the key is kept by default, beside the OAuth tokens:
// os.UserConfigDir()/toolhost/audit.key ($XDG_CONFIG_HOME/toolhost/audit.key
// or ~/.config/toolhost/audit.key on Linux).
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("audit key: no user config directory (set $XDG_CONFIG_HOME or $HOME): %w", err)
	}
	return filepath.Join(dir, "toolhost", "audit.key"), nil
}

// ID is the key's identifier, 16 hex digits written into each audit record
// (key_id) so that records hashed under different keys can be told apart:
// the first 8 bytes of HMAC-SHA-256(key, "toolhost audit key id"). It
// reveals nothing usable about the key.
func ID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolhost audit key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Load reads and checks the key at path. A missing file is an error
// wrapping fs.ErrNotExist; an unsafe one wraps ErrInsecure; one that is not
// 64 hex digits (and an optional newline) wraps ErrMalformed.
func Load(path string) ([]byte, error) {
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("%w: %s is a symbolic link: remove it (toolhost audit rotate-key creates a new key)", ErrInsecure, path)
		}
		return nil, fmt.Errorf("audit key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if err := checkFile(path, info); err != nil {
		return nil, err
	}
	buf, err := io.ReadAll(io.LimitReader(f, 2*Size+2))
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	text := bytes.TrimSuffix(buf, []byte("\n"))
	key := make([]byte, Size)
	if len(text) != 2*Size {
		return nil, fmt.Errorf("%w: %s must hold %d hex digits and a newline: run toolhost audit rotate-key to write a new key", ErrMalformed, path, 2*Size)
	}
	if _, err := hex.Decode(key, text); err != nil {
		return nil, fmt.Errorf("%w: %s must hold %d hex digits and a newline: run toolhost audit rotate-key to write a new key", ErrMalformed, path, 2*Size)
	}
	return key, nil
}

// LoadOrCreate returns the key at path, creating it (and its directory,
// mode 0700) when there is none. Of concurrent creators, one wins and all
// return its key.
func LoadOrCreate(path string) ([]byte, error) {
	key, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	tmp, key, err := writeTemp(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	// A hard link fails if path exists: the first creator wins.
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return Load(path)
	} else if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	return key, nil
}

// Rotate replaces the key at path (or creates it) with a new random one,
// atomically, and returns the old key (nil when there was none or it could
// not be used) and the new one. Records written before keep the old key's
// ID; the old key is not kept. A running Host keeps the key it loaded until
// it is restarted.
func Rotate(path string) (old, key []byte, err error) {
	old, err = Load(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInsecure) {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("audit key: %w", err)
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, nil, err
	}
	tmp, key, err := writeTemp(filepath.Dir(path))
	if err != nil {
		return nil, nil, err
	}
	// rename replaces a symbolic link itself, never its target.
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, nil, fmt.Errorf("audit key: %w", err)
	}
	return old, key, nil
}

// writeTemp writes a new random key to a temporary file of mode 0600 in
// dir, synced, and returns its path and the key.
func writeTemp(dir string) (string, []byte, error) {
	key := make([]byte, Size)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	f, err := os.CreateTemp(dir, ".audit-key-*")
	if err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", nil, fmt.Errorf("audit key: %w", err)
	}
	ok = true
	return f.Name(), key, nil
}
