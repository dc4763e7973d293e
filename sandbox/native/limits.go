package native

// limits are one start's memory and pids limits: cgroups where the kernel
// offers them (v2 delegated, else v1), else rlimits the child sets itself.
// STUB: replaced by the limits part (cgroups, monitor, classification).
type limits struct {
	memory int64
	pids   int
}

// newLimits prepares the limits of one start of server name (creates its
// cgroups when offered). Errors wrap ErrSetup (or ErrUnavailable).
func newLimits(name string, memory int64, pids int) (*limits, error) {
	return &limits{memory: memory, pids: pids}, nil
}

// add puts pid (the child, before it reads its Config) in the cgroups.
func (l *limits) add(pid int) error { return nil }

// watch starts watching the running server pid: when a limit is hit it
// kills the server (SIGKILL) so that exited reports the limit.
func (l *limits) watch(pid int) {}

// rlimits returns what the child sets itself (RLIMIT_AS, RLIMIT_NPROC;
// 0 = leave): the fallback where cgroups are not offered.
func (l *limits) rlimits() (as, nproc uint64) { return 0, 0 }

// exited classifies the exit (an error wrapping ErrMemoryLimit or
// ErrPidsLimit with the limit, or nil), stops watching and removes the
// cgroups once empty.
func (l *limits) exited(waitErr error) error { return nil }

// probeCgroup reports the cgroup version toolhost can create cgroups in
// ("v2", "v1" or ""). STUB: replaced by the limits part.
func probeCgroup() string { return "" }
