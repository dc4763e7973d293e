//go:build unix

package auditkey

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

const oNoFollow = syscall.O_NOFOLLOW

// isLoop reports whether err is open(2)'s ELOOP: O_NOFOLLOW met a
// symbolic link.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// checkDir refuses a directory that is a symbolic link, not a directory,
// owned by another user, or writable by group or others. A missing one
// is an error wrapping fs.ErrNotExist.
func checkDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("audit key: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (a symbolic link?): the key's directory must be a real directory of mode 0700", ErrInsecure, dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrInsecure, dir, st.Uid, os.Geteuid())
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %v): chmod 700 it", ErrInsecure, dir, info.Mode().Perm())
	}
	return nil
}

// checkFile refuses a key file that is not a regular file, is owned by
// another user, or has any group or other permission bit.
func checkFile(path string, info os.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrInsecure, path)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrInsecure, path, st.Uid, os.Geteuid())
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s is readable or writable by group or others (mode %v): chmod 600 it, and rotate the key (toolhost audit rotate-key) if someone may have read it", ErrInsecure, path, info.Mode().Perm())
	}
	return nil
}
