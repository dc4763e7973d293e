package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// confinedFS is a mount's file system: wazero's sysfs.DirFS (read-only
// through sysfs.ReadFS unless the mount is rw) behind a check that every
// path, after resolving symlinks on the host, stays inside the mount.
//
// Why: wazero's DirFS confines ".." and absolute paths to the mount, but it
// follows symlinks wherever they point (measured: a symlink in a mount to a
// file outside it is readable, and writable through an rw mount — and a
// dangling one is followed on create, making the file outside). The check
// resolves the path on the host component by component (resolve), following
// every symlink on the way, including the last one and dangling ones whose
// target does not exist yet, and refuses the operation with EACCES when the
// result is outside the mount's resolved root. Operations that act on a link
// itself (Lstat, Unlink, Readlink) check only its directory; Readlink also
// refuses a link that resolves outside the mount, and returns the target
// relative to the link's directory, so no host path reaches the guest.
// Guests cannot create symlinks or hard links (Symlink and Link fail with
// EPERM) nor rename a symlink, so only links placed by the host exist. Known
// limit: on an rw mount shared by several instances, a rename by one
// instance racing with a path check by another could, in theory, swap a
// host-placed outward symlink into a checked path; do not put outward
// symlinks in rw mounts.
type confinedFS struct {
	experimentalsys.FS
	root string // resolved absolute host root
	lim  *instLimits
	q    *quota // nil: no mount_quota
}

// mount is one allowed_paths entry with its host directory resolved.
type mount struct {
	guest string
	root  string // resolved absolute host root
	rw    bool
	quota *quota // nil: none
}

// quota is an rw mount's mount_quota, shared by the plugin's instances: the
// bytes of the regular files under the mount when the plugin connected,
// plus what writes through the sandbox added (file growth, counted by
// logical size), minus what truncation, removal and replacement freed.
// Changes made by others on the host are not tracked.
type quota struct {
	guest string
	max   int64
	used  atomic.Int64
}

// reserve adds n bytes (n may be negative) unless that takes used past max.
func (q *quota) reserve(n int64) bool {
	for {
		u := q.used.Load()
		if n > 0 && u+n > q.max {
			return false
		}
		if q.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// newMounts resolves the mounts' host directories (at Connect).
func newMounts(mounts []Mount) ([]mount, error) {
	out := make([]mount, 0, len(mounts))
	for _, m := range mounts {
		root, err := filepath.EvalSymlinks(m.Host)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return nil, &fs.PathError{Op: "mount", Path: m.Host, Err: fs.ErrInvalid}
		}
		mt := mount{guest: m.Guest, root: root, rw: m.Mode == MountReadWrite}
		if mt.rw && m.Quota > 0 {
			mt.quota = &quota{guest: m.Guest, max: m.Quota}
			var used int64
			_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if fi, err := d.Info(); err == nil {
						used += fi.Size()
					}
				}
				return nil
			})
			mt.quota.used.Store(used)
		}
		out = append(out, mt)
	}
	return out, nil
}

// fsConfig builds one instance's file systems: every mount counts its open
// files against lim.
func fsConfig(mounts []mount, lim *instLimits) wazero.FSConfig {
	cfg := wazero.NewFSConfig()
	for _, m := range mounts {
		var inner experimentalsys.FS = sysfs.DirFS(m.root)
		if !m.rw {
			inner = &sysfs.ReadFS{FS: inner}
		}
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&confinedFS{FS: inner, root: m.root, lim: lim, q: m.quota}, m.guest)
	}
	return cfg
}

// instLimits are one instance's resource counters. The instance's call
// goroutine updates them; wazero may close files from another goroutine
// (an instance closed at its deadline), hence the atomics and the lock.
type instLimits struct {
	maxFiles int64
	open     atomic.Int64

	mu  sync.Mutex
	err error // the first limit the current call hit
}

// exceeded records err as the limit the call hit (the first one wins).
func (l *instLimits) exceeded(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// take returns and clears the limit the call hit, or nil.
func (l *instLimits) take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	l.err = nil
	return err
}

// countedFile releases its slot of the instance's open-file budget when
// closed (by the guest, or by wazero when the instance is closed), and
// charges writes to the mount's quota, if it has one.
type countedFile struct {
	experimentalsys.File
	lim    *instLimits
	q      *quota
	path   string
	closed atomic.Bool
}

func (f *countedFile) Close() experimentalsys.Errno {
	if f.closed.CompareAndSwap(false, true) {
		f.lim.open.Add(-1)
	}
	return f.File.Close()
}

// grow reserves quota for a write of n bytes at off (off < 0: at the
// current offset, or the end in append mode) and returns the file size
// before it; ok is false when the quota would be exceeded.
func (f *countedFile) grow(off int64, n int) (size, at int64, ok bool, e experimentalsys.Errno) {
	st, e := f.File.Stat()
	if e != 0 {
		return 0, 0, false, e
	}
	size, at = st.Size, off
	if at < 0 {
		if at, e = f.File.Seek(0, io.SeekCurrent); e != 0 {
			at = size // append-only files cannot seek
		}
	}
	if add := at + int64(n) - size; add > 0 && !f.q.reserve(add) {
		f.lim.exceeded(fmt.Errorf("writing %d bytes to %q would exceed mount_quota of %s (%d bytes): %w", n, f.path, f.q.guest, f.q.max, ErrQuota))
		return 0, 0, false, 0
	}
	return size, at, true, 0
}

// settle returns the reserved quota a short write did not use.
func (f *countedFile) settle(size, at int64, asked, wrote int) {
	reserved := max(0, at+int64(asked)-size)
	used := max(0, at+int64(wrote)-size)
	if reserved > used {
		f.q.reserve(used - reserved)
	}
}

func (f *countedFile) Write(b []byte) (int, experimentalsys.Errno) {
	if f.q == nil {
		return f.File.Write(b)
	}
	size, at, ok, e := f.grow(-1, len(b))
	if e != 0 {
		return 0, e
	}
	if !ok {
		return 0, experimentalsys.EIO
	}
	n, e := f.File.Write(b)
	f.settle(size, at, len(b), n)
	return n, e
}

func (f *countedFile) Pwrite(b []byte, off int64) (int, experimentalsys.Errno) {
	if f.q == nil {
		return f.File.Pwrite(b, off)
	}
	size, at, ok, e := f.grow(off, len(b))
	if e != 0 {
		return 0, e
	}
	if !ok {
		return 0, experimentalsys.EIO
	}
	n, e := f.File.Pwrite(b, off)
	f.settle(size, at, len(b), n)
	return n, e
}

func (f *countedFile) Truncate(size int64) experimentalsys.Errno {
	if f.q == nil {
		return f.File.Truncate(size)
	}
	st, e := f.File.Stat()
	if e != 0 {
		return e
	}
	if d := size - st.Size; d > 0 && !f.q.reserve(d) {
		f.lim.exceeded(fmt.Errorf("growing %q to %d bytes would exceed mount_quota of %s (%d bytes): %w", f.path, size, f.q.guest, f.q.max, ErrQuota))
		return experimentalsys.EIO
	}
	if e := f.File.Truncate(size); e != 0 {
		if d := size - st.Size; d > 0 {
			f.q.reserve(-d)
		}
		return e
	}
	if d := size - st.Size; d < 0 {
		f.q.reserve(d)
	}
	return 0
}

// fileSize is the size of the regular file at path (relative to the
// mount), or 0.
func (c *confinedFS) fileSize(path string) int64 {
	st, e := c.FS.Lstat(path)
	if e != 0 || st.Mode&fs.ModeType != 0 {
		return 0
	}
	return st.Size
}

// maxSymlinks bounds the links followed while resolving one path (Linux's
// MAXSYMLINKS).
const maxSymlinks = 40

// check resolves path (relative to the mount) on the host and refuses it
// when it leads outside the mount.
func (c *confinedFS) check(path string) experimentalsys.Errno {
	r, e := c.resolve(path)
	if e != 0 {
		return e
	}
	if !c.within(r) {
		return experimentalsys.EACCES
	}
	return 0
}

// resolve returns the host path that path (relative to the mount) leads
// to: every symlink on the way is followed, the last one and dangling ones
// included; from the first component that does not exist on, the rest is
// joined lexically. An I/O error other than "does not exist" stops the
// walk where it happened (the operation itself then reports it).
func (c *confinedFS) resolve(path string) (string, experimentalsys.Errno) {
	cur := c.root
	rest := splitPath(filepath.FromSlash(path))
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), 0
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", experimentalsys.ELOOP
		}
		target, err := os.Readlink(next)
		if err != nil {
			return next, 0
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, 0
}

func splitPath(p string) []string {
	return strings.Split(p, string(filepath.Separator))
}

func (c *confinedFS) within(p string) bool {
	return p == c.root || strings.HasPrefix(p, c.root+string(filepath.Separator))
}

func (c *confinedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if e := c.check(path); e != 0 {
		return nil, e
	}
	if c.lim == nil {
		return c.FS.OpenFile(path, flag, perm)
	}
	var truncated int64
	if c.q != nil && flag&experimentalsys.O_TRUNC != 0 {
		truncated = c.fileSize(path)
	}
	if n := c.lim.open.Add(1); n > c.lim.maxFiles {
		c.lim.open.Add(-1)
		c.lim.exceeded(fmt.Errorf("opening %q: the instance already holds %d open files, its max_open_files: %w", path, c.lim.maxFiles, ErrOpenFiles))
		return nil, experimentalsys.EIO
	}
	f, e := c.FS.OpenFile(path, flag, perm)
	if e != 0 {
		c.lim.open.Add(-1)
		return nil, e
	}
	if truncated > 0 {
		c.q.reserve(-truncated)
	}
	return &countedFile{File: f, lim: c.lim, q: c.q, path: path}, 0
}

func (c *confinedFS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(filepath.Dir(path)); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Lstat(path)
}

func (c *confinedFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(path); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Stat(path)
}

func (c *confinedFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if e := c.check(path); e != 0 {
		return e
	}
	return c.FS.Mkdir(path, perm)
}

func (c *confinedFS) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	if e := c.check(path); e != 0 {
		return e
	}
	return c.FS.Chmod(path, perm)
}

func (c *confinedFS) Rename(from, to string) experimentalsys.Errno {
	if e := c.check(filepath.Dir(from)); e != 0 {
		return e
	}
	if e := c.check(to); e != 0 {
		return e
	}
	if st, e := c.FS.Lstat(from); e == 0 && st.Mode&fs.ModeSymlink != 0 {
		return experimentalsys.EPERM
	}
	if c.q == nil {
		return c.FS.Rename(from, to)
	}
	replaced := c.fileSize(to)
	e := c.FS.Rename(from, to)
	if e == 0 && replaced > 0 {
		c.q.reserve(-replaced)
	}
	return e
}

func (c *confinedFS) Rmdir(path string) experimentalsys.Errno {
	if e := c.check(path); e != 0 {
		return e
	}
	return c.FS.Rmdir(path)
}

func (c *confinedFS) Unlink(path string) experimentalsys.Errno {
	if e := c.check(filepath.Dir(path)); e != 0 {
		return e
	}
	if c.q == nil {
		return c.FS.Unlink(path)
	}
	size := c.fileSize(path)
	e := c.FS.Unlink(path)
	if e == 0 && size > 0 {
		c.q.reserve(-size)
	}
	return e
}

func (c *confinedFS) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }
func (c *confinedFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

// Readlink reveals a link's target only when the link resolves inside the
// mount; the target is returned relative to the link's directory and
// cleaned (an absolute target, or one climbing above the mount root and
// back, would otherwise show host directory names).
func (c *confinedFS) Readlink(path string) (string, experimentalsys.Errno) {
	if e := c.check(filepath.Dir(path)); e != 0 {
		return "", e
	}
	if e := c.check(path); e != 0 {
		return "", e
	}
	t, e := c.FS.Readlink(path)
	if e != 0 {
		return "", e
	}
	dir, e := c.resolve(filepath.Dir(path))
	if e != 0 {
		return "", e
	}
	abs := t
	if !filepath.IsAbs(t) {
		abs = filepath.Join(dir, t)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || !c.within(abs) {
		return "", experimentalsys.EACCES
	}
	return filepath.ToSlash(rel), 0
}

func (c *confinedFS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	if e := c.check(path); e != 0 {
		return e
	}
	return c.FS.Utimens(path, atim, mtim)
}
