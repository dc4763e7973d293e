//go:build linux

package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The new root is built the way bubblewrap's setup_newroot does it
// (bubblewrap.c): a staging tmpfs is mounted on /tmp and pivot_root(2)ed
// into, with the old root under it at /oldroot and the new root, a tmpfs,
// at /newroot; the mounts are made from /oldroot into /newroot; then the
// old root is detached, pivot_root(2) makes /newroot the root and the
// staging tmpfs is detached too.
const (
	staging  = "/tmp"
	oldRoot  = "/oldroot"
	newRoot  = "/newroot"
	rootSize = 8 << 20 // bytes of the new root's own tmpfs (mount points and Files)
)

// devNodes are the device nodes of the "dev" mount, bound from the host's
// /dev (bubblewrap's --dev has the same set).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// DevNodes are the guest paths of the "dev" mount's device nodes.
func DevNodes() []string {
	out := make([]string, len(devNodes))
	for i, n := range devNodes {
		out[i] = "/dev/" + n
	}
	return out
}

// procReadOnly are the parts of a fresh /proc bound read-only over
// themselves (bubblewrap's list): kernel knobs no server needs to write.
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus"}

func buildRoot(c *Config) error {
	// Private first: a mount namespace copies the parent's mounts with
	// their propagation, and mounts made here must not propagate back
	// (mount_namespaces(7)).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return stage("mount / private", err)
	}
	if err := unix.Mount("tmpfs", staging, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=65536"); err != nil {
		return stage("mount staging tmpfs on "+staging, err)
	}
	for _, d := range []string{staging + oldRoot, staging + newRoot} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return stage("mkdir "+d, err)
		}
	}
	if err := unix.Mount("tmpfs", staging+newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d", rootSize)); err != nil {
		return stage("mount root tmpfs", err)
	}
	if err := unix.PivotRoot(staging, staging+oldRoot); err != nil {
		return stage("pivot_root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return stage("chdir /", err)
	}
	for _, m := range c.Mounts {
		if err := mountOne(m); err != nil {
			return stage("mount "+m.Target, err)
		}
	}
	for _, f := range c.Files {
		if err := writeFile(f); err != nil {
			return stage("write "+f.Target, err)
		}
	}
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return stage("detach old root", err)
	}
	if err := unix.Chdir(newRoot); err != nil {
		return stage("chdir new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return stage("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return stage("detach staging", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return stage("chdir /", err)
	}
	// Seal the root: its tmpfs holds only mount points and Files.
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return stage("remount / read-only", err)
	}
	return nil
}

// guest returns the staging path of guest path p under the new root.
func guest(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return "", fmt.Errorf("guest path %q is not absolute and clean", p)
	}
	return newRoot + p, nil
}

// mkdirs creates the directories of path under the new root that are
// missing (0755), refusing a symbolic link or a non-directory on the way:
// a mount on a path through a symbolic link could land anywhere.
func mkdirs(path string) error {
	rel := strings.TrimPrefix(path, newRoot)
	cur := newRoot
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		cur += "/" + part
		var st unix.Stat_t
		err := unix.Lstat(cur, &st)
		switch {
		case errors.Is(err, unix.ENOENT):
			if err := unix.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return fmt.Errorf("%s is a symbolic link", strings.TrimPrefix(cur, newRoot))
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("%s is not a directory", strings.TrimPrefix(cur, newRoot))
		}
	}
	return nil
}

// mkTarget makes the mount point dst: a directory, or an empty file when
// dir is false. An existing one of the right kind is kept; a symbolic link
// is refused.
func mkTarget(dst string, dir bool) error {
	if err := mkdirs(filepath.Dir(dst)); err != nil {
		return err
	}
	var st unix.Stat_t
	err := unix.Lstat(dst, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		if dir {
			return unix.Mkdir(dst, 0o755)
		}
		fd, err := unix.Open(dst, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case err != nil:
		return err
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errors.New("the mount point is a symbolic link")
	case (st.Mode&unix.S_IFMT == unix.S_IFDIR) != dir:
		return errors.New("the mount point exists and is not of the source's kind")
	}
	return nil
}

func mountOne(m Mount) error {
	dst, err := guest(m.Target)
	if err != nil {
		return err
	}
	switch m.Kind {
	case "bind":
		return bind(oldRoot+m.Source, dst, m.ReadOnly, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	case "tmpfs":
		if err := mkTarget(dst, true); err != nil {
			return err
		}
		mode := "0755"
		if m.Target == "/tmp" {
			mode = "1777"
		}
		if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsData(mode, m.Size)); err != nil {
			return err
		}
		if m.ReadOnly {
			return setAttr(dst, unix.MOUNT_ATTR_RDONLY, false)
		}
		return nil
	case "proc":
		if err := mkTarget(dst, true); err != nil {
			return err
		}
		// A procfs of the new PID namespace (proc(5)); allowed in a user
		// namespace while a full procfs is visible (the old root's).
		if err := unix.Mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return err
		}
		for _, p := range procReadOnly {
			sub := dst + "/" + p
			if _, err := os.Lstat(sub); err != nil {
				continue
			}
			if err := unix.Mount(sub, sub, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("binding /proc/%s read-only: %w", p, err)
			}
			if err := setAttr(sub, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, true); err != nil {
				return fmt.Errorf("binding /proc/%s read-only: %w", p, err)
			}
		}
		return nil
	case "dev":
		return mountDev(dst, m.Target)
	case "overlay":
		return mountOverlay(oldRoot+m.Source, dst, m.Size)
	case "symlink":
		if err := mkdirs(filepath.Dir(dst)); err != nil {
			return err
		}
		return unix.Symlink(m.Source, dst)
	}
	return fmt.Errorf("unknown mount kind %q", m.Kind)
}

func tmpfsData(mode string, size int64) string {
	if size > 0 {
		return fmt.Sprintf("mode=%s,size=%d", mode, size)
	}
	return "mode=" + mode
}

// bind binds src (a path under the old root) on dst, recursively, adding
// attrs and MOUNT_ATTR_RDONLY when ro to the whole bound tree.
func bind(src, dst string, ro bool, attrs uint64) error {
	if err := noSymlinks(src); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if err := mkTarget(dst, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if ro {
		attrs |= unix.MOUNT_ATTR_RDONLY
	}
	return setAttr(dst, attrs, true)
}

// setAttr adds the mount attributes attrs to the mount at path (and its
// submounts when recursive) with mount_setattr(2), which sets the flags
// asked for and keeps the others, including those the kernel locked on a
// mount that came from a more privileged namespace (mount(2), EPERM). On a
// kernel before 5.12 it falls back to a bind remount (MS_REMOUNT|MS_BIND)
// of path alone that repeats the flags the mount has (statfs(2)).
func setAttr(path string, attrs uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	err := unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: attrs})
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return err
	}
	mf := uintptr(unix.MS_REMOUNT | unix.MS_BIND)
	for _, f := range []struct {
		st   int64
		ms   uintptr
		attr uint64
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY, unix.MOUNT_ATTR_RDONLY},
		{unix.ST_NOSUID, unix.MS_NOSUID, unix.MOUNT_ATTR_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV, unix.MOUNT_ATTR_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC, unix.MOUNT_ATTR_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME, unix.MOUNT_ATTR_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME, unix.MOUNT_ATTR_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME, unix.MOUNT_ATTR_RELATIME},
	} {
		if sfs.Flags&f.st != 0 || attrs&f.attr != 0 {
			mf |= f.ms
		}
	}
	return unix.Mount("", path, "", mf, "")
}

// mountDev makes a minimal /dev: a tmpfs with the device nodes bound from
// the host, the /dev/fd and standard stream links, and a /dev/shm tmpfs;
// the tmpfs is then made read-only.
func mountDev(dst, target string) error {
	if err := mkTarget(dst, true); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=65536"); err != nil {
		return err
	}
	for _, n := range devNodes {
		src := oldRoot + "/dev/" + n
		if _, err := os.Stat(src); err != nil {
			continue // no such node on this host (a container without a tty)
		}
		if err := bind(src, dst+"/"+n, false, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return fmt.Errorf("/dev/%s: %w", n, err)
		}
	}
	for name, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := unix.Symlink(to, dst+"/"+name); err != nil {
			return err
		}
	}
	shm := dst + "/shm"
	if err := unix.Mkdir(shm, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=67108864"); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	return setAttr(dst, unix.MOUNT_ATTR_RDONLY, false)
}

// writeFile writes f into the new root (mode 0644); the root is sealed
// read-only afterwards.
func writeFile(f File) error {
	dst, err := guest(f.Target)
	if err != nil {
		return err
	}
	if err := mkdirs(filepath.Dir(dst)); err != nil {
		return err
	}
	fd, err := unix.Open(dst, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for b := []byte(f.Content); len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// overlays counts the overlay mounts made, naming their layers' tmpfs.
var overlays int

// mountOverlay mounts an overlay (Documentation/filesystems/overlayfs.rst)
// on dst: the lower layer is src (the host's directory, never written),
// the upper layer a tmpfs of size bytes (0: the kernel default) made in
// the staging tmpfs, so writes stay private and end with the server.
// userxattr: an overlay mounted in a user namespace keeps its whiteouts
// in user.* extended attributes (kernel 5.11+).
func mountOverlay(src, dst string, size int64) error {
	if strings.ContainsAny(src, ",:\\") {
		return fmt.Errorf("the lower directory %q has a comma, colon or backslash, which overlay options cannot carry", strings.TrimPrefix(src, oldRoot))
	}
	if err := noSymlinks(src); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return errors.New("source: not a directory")
	}
	overlays++
	layer := fmt.Sprintf("/overlay%d", overlays)
	if err := unix.Mkdir(layer, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", layer, err)
	}
	if err := unix.Mount("tmpfs", layer, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsData("0700", size)); err != nil {
		return fmt.Errorf("mount the upper layer's tmpfs: %w", err)
	}
	for _, d := range []string{layer + "/upper", layer + "/work"} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	if err := mkTarget(dst, true); err != nil {
		return err
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work,userxattr", src, layer, layer)
	if err := unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return nil
}

// noSymlinks refuses a source path (under the old root) with a symbolic
// link on it: Plan resolved every source's links, so one there now was made
// since (by a server with write access to a parent directory, say) and
// would point the mount elsewhere. openat2(2) with RESOLVE_NO_SYMLINKS
// (Linux 5.6; older kernels skip the check: the plan's resolution stands).
// Nothing of the server runs while its sandbox is set up.
func noSymlinks(src string) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, src, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	switch {
	case err == nil:
		return unix.Close(fd)
	case errors.Is(err, unix.ENOSYS):
		return nil
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("source %s: a symbolic link is on its path now (there was none when the sandbox was planned): refused", strings.TrimPrefix(src, oldRoot))
	}
	return fmt.Errorf("source: %w", err)
}
