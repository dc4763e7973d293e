//go:build linux

package native

import (
	"fmt"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/units"
	"golang.org/x/sys/unix"
)

// limitPoll is how often the monitor reads the cgroup's event counters:
// a server over a limit is killed within about this long (plus the
// kernel's own OOM handling).
const limitPoll = 100 * time.Millisecond

// limits are one start's memory and pids limits: a cgroup where the
// kernel offers one (v2 delegated, else v1; see cgroup.go), else rlimits
// the child sets itself (nsinit's setRlimits, which says what they count).
//
// Life: newLimits before the start; add(pid) once the child exists and
// before it reads its Config, so that all it does is counted; watch(pid)
// once it runs; exited(waitErr) once it has been waited for, always, even
// when the start failed after newLimits (it removes the cgroup). watch and
// exited may be called from different goroutines; exited is called once.
type limits struct {
	name   string
	memory int64 // bytes, 0: none
	pids   int   // processes and threads, 0: none
	cg     *cgroup

	watchOnce sync.Once
	exitOnce  sync.Once
	exitErr   error
	stop      chan struct{}
	done      chan struct{} // closed when the monitor has ended

	mu  sync.Mutex
	hit error // set by the monitor when it killed the server
}

// newLimits prepares the limits of one start of server name: memory in
// bytes and pids processes and threads together (0: no limit). Where a
// cgroup is offered (probeCgroup) it makes the start's cgroup, removing
// stale ones first; an error making it wraps ErrSetup and names the file.
// Where none is, the limits are rlimits the child sets (rlimits()).
func newLimits(name string, memory int64, pids int) (*limits, error) {
	return newLimitsIn(hierOnce(), name, memory, pids)
}

func newLimitsIn(h cgroupHier, name string, memory int64, pids int) (*limits, error) {
	l := &limits{name: name, memory: memory, pids: pids, stop: make(chan struct{}), done: make(chan struct{})}
	if h.version == "" || (memory <= 0 && pids <= 0) {
		return l, nil
	}
	cg, err := newCgroup(h, name, memory, pids)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	l.cg = cg
	return l, nil
}

// add puts pid (the child, before it reads its Config) in the cgroup
// (writing cgroup.procs). Errors wrap ErrSetup.
func (l *limits) add(pid int) error {
	if l.cg == nil {
		return nil
	}
	for _, d := range l.cg.dirs() {
		if err := writeFile(d+"/cgroup.procs", fmt.Sprint(pid)); err != nil {
			return fmt.Errorf("%w: cgroup: adding process %d to %s: %w", ErrSetup, pid, d, err)
		}
	}
	return nil
}

// watch starts watching the running server pid: every limitPoll (100ms)
// it reads the cgroup's OOM-kill counter (memory) and its count of forks
// refused at pids.max (pids); when either rose, it SIGKILLs pid (through
// a pidfd opened now, so that a reused pid is never signalled; as PID 1
// of its namespace its death ends every process of the server) and every
// process left in the cgroup, and exited reports the limit. A fork bomb
// is stopped, not left spinning at the limit. The monitor ends at exited.
// Without a cgroup, watch does nothing (an rlimit makes the failing call
// fail in the server, which handles it or not).
func (l *limits) watch(pid int) {
	if l.cg == nil {
		return
	}
	l.watchOnce.Do(func() {
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			pidfd = -1 // gone already: exited classifies from the counters
		}
		go l.monitor(pidfd)
	})
}

func (l *limits) monitor(pidfd int) {
	defer close(l.done)
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	t := time.NewTicker(limitPoll)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		err := l.check()
		if err == nil {
			continue
		}
		l.mu.Lock()
		l.hit = err
		l.mu.Unlock()
		if pidfd >= 0 {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		l.cg.killAll()
		return
	}
}

// check returns the limit the server hit (from the cgroup's counters),
// nil if none.
func (l *limits) check() error {
	if l.memory > 0 && l.cg.oomKills() > 0 {
		return fmt.Errorf("server killed: memory limit %s exceeded (memory of [servers.%s]): %w",
			units.Bytes(l.memory), l.name, ErrMemoryLimit)
	}
	if l.pids > 0 && l.cg.pidsRefused() > 0 {
		return fmt.Errorf("server killed: process limit of %d processes and threads reached (pids of [servers.%s]): %w",
			l.pids, l.name, ErrPidsLimit)
	}
	return nil
}

// rlimits returns what the child sets itself where no cgroup is offered:
// RLIMIT_AS = memory, RLIMIT_NPROC = pids (0 = leave). With a cgroup, 0, 0.
func (l *limits) rlimits() (as, nproc uint64) {
	if l.cg != nil {
		return 0, 0
	}
	return uint64(max(l.memory, 0)), uint64(max(l.pids, 0))
}

// exited classifies the exit of the server, which has been waited for
// (waitErr is cmd.Wait's error): an error wrapping ErrMemoryLimit or
// ErrPidsLimit with the limit when the monitor killed it, or when the
// server died (waitErr != nil) after the kernel's OOM killer acted or a
// fork was refused at the limit, before the monitor saw it; nil otherwise.
// It stops the monitor (waiting for it), kills what is left in the cgroup
// and removes it (a cgroup that cannot be removed is retried at the next
// start). A second call returns the first's result.
func (l *limits) exited(waitErr error) error {
	if l.cg == nil {
		return nil
	}
	l.exitOnce.Do(func() { l.exitErr = l.exit(waitErr) })
	return l.exitErr
}

func (l *limits) exit(waitErr error) error {
	close(l.stop)
	l.watchOnce.Do(func() { close(l.done) }) // never watched
	<-l.done
	l.mu.Lock()
	err := l.hit
	l.mu.Unlock()
	if err == nil && waitErr != nil {
		err = l.check()
	}
	l.cg.remove()
	return err
}
