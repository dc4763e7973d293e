package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
	"github.com/toolhost/toolhost/config"
)

// confinedFS is a mount's file system: wazero's sysfs.DirFS (read-only
// through sysfs.ReadFS unless the mount is rw) behind a check that every
// path, after resolving symlinks on the host, stays inside the mount.
//
// Why: wazero's DirFS confines ".." and absolute paths to the mount, but it
// follows symlinks wherever they point (measured: a symlink in a mount to a
// file outside it is readable, and writable through an rw mount). The check
// resolves the path (or, for a path that does not exist yet, its parent)
// with filepath.EvalSymlinks and refuses it with EACCES when the result is
// outside the mount's resolved root. Guests cannot create symlinks or hard
// links (Symlink and Link fail with EPERM) nor rename a symlink, so only
// links placed by the host exist. Known limit: on an rw mount shared by
// several instances, a rename by one instance racing with a path check by
// another could, in theory, swap a host-placed outward symlink into a
// checked path; do not put outward symlinks in rw mounts.
type confinedFS struct {
	experimentalsys.FS
	root string // resolved absolute host root
}

func newMountConfig(mounts []config.Mount) (wazero.FSConfig, error) {
	cfg := wazero.NewFSConfig()
	for _, m := range mounts {
		root, err := filepath.EvalSymlinks(m.Host)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return nil, &fs.PathError{Op: "mount", Path: m.Host, Err: fs.ErrInvalid}
		}
		var inner experimentalsys.FS = sysfs.DirFS(root)
		if !m.ReadWrite {
			inner = &sysfs.ReadFS{FS: inner}
		}
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&confinedFS{FS: inner, root: root}, m.Guest)
	}
	return cfg, nil
}

// check resolves path (relative to the mount) on the host.
func (c *confinedFS) check(path string) experimentalsys.Errno {
	p := filepath.Join(c.root, filepath.FromSlash(path))
	if !c.within(p) {
		return experimentalsys.EACCES
	}
	// Resolve the longest existing prefix.
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			if !c.within(r) {
				return experimentalsys.EACCES
			}
			return 0
		}
		if !os.IsNotExist(err) {
			return 0 // let the operation itself report the error
		}
		if p == c.root {
			return 0
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = filepath.Dir(p)
		if !c.within(p) {
			return experimentalsys.EACCES
		}
	}
}

func (c *confinedFS) within(p string) bool {
	return p == c.root || strings.HasPrefix(p, c.root+string(filepath.Separator))
}

func (c *confinedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if e := c.check(path); e != 0 {
		return nil, e
	}
	return c.FS.OpenFile(path, flag, perm)
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
	return c.FS.Rename(from, to)
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
	return c.FS.Unlink(path)
}

func (c *confinedFS) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }
func (c *confinedFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

func (c *confinedFS) Readlink(path string) (string, experimentalsys.Errno) {
	if e := c.check(filepath.Dir(path)); e != 0 {
		return "", e
	}
	return c.FS.Readlink(path)
}

func (c *confinedFS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	if e := c.check(path); e != 0 {
		return e
	}
	return c.FS.Utimens(path, atim, mtim)
}
