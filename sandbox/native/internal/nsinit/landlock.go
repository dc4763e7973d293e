//go:build linux

package nsinit

import (
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// restrictLandlock enforces l on the calling thread (which execve()s the
// server next, keeping its Landlock domain): the file system rights of
// ABI 7 (read and execute under ReadOnly, everything under ReadWrite, the
// listing of directory names from / down) and the abstract Unix socket
// and signal scopes (kernel Documentation/userspace-api/landlock.rst).
// TCP is left to the network namespace, whose only reachable addresses are
// the server's own loopback and the relay's listeners: a Landlock connect
// rule limited to the relay's ports also refused a server's connections to
// its own loopback services (a browser's debugging port, a helper
// process), which reach nothing outside. Strict mode needs ABI 7; BestEffort takes
// what the kernel offers (nothing on a kernel without Landlock). The
// ruleset is built with go-landlock's Config.NewRulesetFD and enforced with
// landlock_restrict_self(2) on this thread only, as its documentation's
// example for a following execve does (go-landlock's Restrict would reach
// every thread through libpsx, which a cgo build cannot use).
func restrictLandlock(l *Landlock) error {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V7.HandledAccessFS,
		Scoped:          landlock.V7.Scoped,
	}
	if l.BestEffort {
		cfg = cfg.BestEffort()
	}
	rules := []landlock.Rule{landlock.PathAccess(landlock.AccessFSSet(llsyscall.AccessFSReadDir), "/")}
	for _, p := range l.ReadOnly {
		if isDir(p) {
			rules = append(rules, landlock.RODirs(p).IgnoreIfMissing())
		} else {
			rules = append(rules, landlock.ROFiles(p).IgnoreIfMissing())
		}
	}
	for _, p := range l.ReadWrite {
		if isDir(p) {
			rules = append(rules, landlock.RWDirs(p).IgnoreIfMissing())
		} else {
			// Device nodes (/dev/null, /dev/tty) need their ioctls.
			rules = append(rules, landlock.RWFiles(p).WithIoctlDev().IgnoreIfMissing())
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return nil // best effort on a kernel without Landlock
	}
	defer unix.Close(fd)
	return llsyscall.LandlockRestrictSelf(fd, flags)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
