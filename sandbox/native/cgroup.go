package native

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Control groups (kernel Documentation/admin-guide/cgroup-v2.rst and
// cgroup-v1/{memory,pids}.rst) limit a server's memory and its processes
// and threads together, which rlimits cannot. toolhost makes one cgroup
// per server start, named toolhost-<toolhost's pid>-<server name>-<seq>,
// under a "toolhost" cgroup it creates in its own cgroup where it can (so
// that whatever limits toolhost's own cgroup has still apply to its
// servers):
//
//   - cgroup v2, where the unified hierarchy has the memory and pids
//     controllers and toolhost may create children with them, the first
//     of: its own cgroup (from /proc/self/cgroup) with memory and pids in
//     cgroup.subtree_control; its own cgroup when it is the hierarchy's
//     real root (toolhost enables them); its own cgroup's parent when that
//     is delegated (systemd's Delegate= with DelegateSubgroup=, marked by
//     the trusted.delegate or user.delegate extended attribute) and has
//     them; the hierarchy's root as mounted, when writable (root on a
//     systemd machine, as Docker's cgroupfs driver does): a v2 cgroup with
//     processes cannot have children with controllers, so toolhost's own
//     cgroup is usable only in those cases.
//     Files: memory.max, memory.swap.max = 0, memory.oom.group = 1,
//     pids.max; memory.events oom_kill and pids.events max are watched.
//   - cgroup v1, where the memory and pids hierarchies are mounted and
//     toolhost's own cgroup in both is writable: memory.limit_in_bytes,
//     memory.memsw.limit_in_bytes (when the kernel accounts swap, so that
//     swap does not dodge the limit), pids.max; memory.oom_control
//     oom_kill and pids.events max are watched.

// cgroupHier is where this process can make cgroups.
type cgroupHier struct {
	// version is "v2", "v1" or "" (none writable; why says why).
	version string
	why     string
	// v2: memDir == pidsDir, the cgroup under which "toolhost" is made;
	// enable: cgroup.subtree_control lacks memory or pids there (the
	// hierarchy's root) and must get them. v1: toolhost's own cgroup in
	// the memory and in the pids hierarchy.
	memDir, pidsDir string
	enable          bool
	// memRel, pidsRel: those directories as /proc/PID/cgroup names them
	// (to tell whether a process is in one of our cgroups).
	memRel, pidsRel string
}

// cgroupParent is the name of the cgroup toolhost makes its servers'
// cgroups in.
const cgroupParent = "toolhost"

var hierOnce = sync.OnceValue(func() cgroupHier {
	return detectCgroup("/proc/self/mountinfo", "/proc/self/cgroup")
})

// probeCgroup reports the cgroup version toolhost can limit servers with:
// "v2" (a delegated, writable subtree of the unified hierarchy with the
// memory and pids controllers), "v1" (writable memory and pids
// hierarchies) or "" (neither: the limits fall back to rlimits). Computed
// once per process.
func probeCgroup() string { return hierOnce().version }

// cgroupMount is one cgroup file system from /proc/self/mountinfo
// (proc(5)): its root within the hierarchy, where it is mounted, v2 or
// not, and a v1 mount's controllers.
type cgroupMount struct {
	root, point string
	v2          bool
	controllers map[string]bool
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a mountinfo
// file (proc(5): "36 35 98:0 /root /point opts - fstype source superopts").
func parseMountinfo(b []byte) []cgroupMount {
	var ms []cgroupMount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), v2: g[0] == "cgroup2", controllers: map[string]bool{}}
		for _, o := range strings.Split(g[2], ",") {
			m.controllers[o] = true
		}
		ms = append(ms, m)
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup returns a /proc/PID/cgroup file (cgroups(7):
// "hierarchy-ID:controllers:path") as controller → path; the unified
// hierarchy's line ("0::/path") is under "".
func parseProcCgroup(b []byte) map[string]string {
	own := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own
}

// inMount returns the directory of cgroup path (as /proc/self/cgroup names
// it) under mount m, or false when m does not show it.
func inMount(m cgroupMount, path string) (string, bool) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

func hasControllers(file string, want ...string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(b)) {
		have[c] = true
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

// subtreeHas reports whether the children of the v2 cgroup dir get the
// memory and pids controllers.
func subtreeHas(dir string) bool {
	return hasControllers(filepath.Join(dir, "cgroup.subtree_control"), "memory", "pids")
}

// realRoot reports whether the v2 cgroup dir is the hierarchy's real root
// (which has no cgroup.type, cgroup-v2.rst; the root of a cgroup namespace
// has one), the only cgroup that may have both processes and controllers
// enabled for its children.
func realRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, fs.ErrNotExist)
}

func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// delegated reports whether systemd delegated dir (the trusted.delegate or
// user.delegate extended attribute, systemd.resource-control(5)).
func delegated(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		var b [8]byte
		if n, err := unix.Getxattr(dir, attr, b[:]); err == nil && n > 0 && b[0] == '1' {
			return true
		}
	}
	return false
}

// detectCgroup finds where this process can make cgroups, from a
// mountinfo and a /proc/PID/cgroup file.
func detectCgroup(mountinfo, procCgroup string) cgroupHier {
	mi, err := os.ReadFile(mountinfo)
	if err != nil {
		return cgroupHier{why: err.Error()}
	}
	pc, err := os.ReadFile(procCgroup)
	if err != nil {
		return cgroupHier{why: err.Error()}
	}
	mounts, own := parseMountinfo(mi), parseProcCgroup(pc)
	var why []string
	if path, ok := own[""]; ok {
		for _, m := range mounts {
			if !m.v2 {
				continue
			}
			dir, ok := inMount(m, path)
			if !ok {
				continue
			}
			if !hasControllers(filepath.Join(dir, "cgroup.controllers"), "memory", "pids") {
				why = append(why, "cgroup v2: the memory and pids controllers are not available in "+dir)
				continue
			}
			use := func(d, rel string, enable bool) cgroupHier {
				return cgroupHier{version: "v2", memDir: d, pidsDir: d, memRel: rel, pidsRel: rel, enable: enable}
			}
			parent, parentRel := filepath.Dir(dir), filepath.Dir(path)
			switch {
			case writable(dir) && subtreeHas(dir):
				return use(dir, path, false)
			case writable(dir) && realRoot(dir):
				return use(dir, path, true)
			case path != m.root && delegated(parent) && writable(parent) && subtreeHas(parent):
				return use(parent, parentRel, false)
			case dir != m.point && writable(m.point) && subtreeHas(m.point):
				return use(m.point, m.root, false)
			case dir != m.point && writable(m.point) && realRoot(m.point):
				return use(m.point, m.root, true)
			default:
				why = append(why, "cgroup v2: "+dir+" is not delegated (memory and pids not in its cgroup.subtree_control) and "+
					m.point+" is not writable with them")
			}
		}
	}
	h := cgroupHier{version: "v1"}
	for _, c := range []struct {
		name     string
		dir, rel *string
	}{{"memory", &h.memDir, &h.memRel}, {"pids", &h.pidsDir, &h.pidsRel}} {
		path, ok := own[c.name]
		if !ok {
			why = append(why, "cgroup v1: no "+c.name+" hierarchy")
			return cgroupHier{why: strings.Join(why, "; ")}
		}
		for _, m := range mounts {
			if m.v2 || !m.controllers[c.name] {
				continue
			}
			if dir, ok := inMount(m, path); ok {
				*c.dir, *c.rel = dir, path
				break
			}
		}
		switch {
		case *c.dir == "":
			why = append(why, "cgroup v1: the "+c.name+" hierarchy is not mounted")
		case !writable(*c.dir):
			why = append(why, "cgroup v1: "+*c.dir+" is not writable")
		default:
			continue
		}
		return cgroupHier{why: strings.Join(why, "; ")}
	}
	return h
}

// cgroupSeq numbers the cgroups of this process.
var cgroupSeq atomic.Int64

// liveCgroups are the cgroup directories of this process's running
// starts; a toolhost-<own pid>-* directory not among them is a leftover
// that cleanStale removes.
var liveCgroups sync.Map // dir -> true

// cgroup is one start's cgroup (v2: one directory; v1: one in the memory
// and one in the pids hierarchy).
type cgroup struct {
	v2      bool
	mem     string // directory with memory.* files
	pids    string // directory with pids.* files
	memRel  string // mem as /proc/PID/cgroup names it
	pidsRel string
}

func (c *cgroup) dirs() []string {
	if c.mem == c.pids {
		return []string{c.mem}
	}
	return []string{c.mem, c.pids}
}

// cgroupName is the directory name of a start's cgroup: characters other
// than letters, digits, '.', '_' and '-' in the server's name become '_',
// which is cut to 64 bytes.
func cgroupName(server string, seq int64) string {
	b := []byte(server)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return fmt.Sprintf("toolhost-%d-%s-%d", os.Getpid(), b, seq)
}

// writeFile writes s to an existing cgroup file.
func writeFile(file, s string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// newCgroup makes the cgroup of one start of server with the limits
// (0: none) in h, and first the "toolhost" parent and the cleaning of
// stale cgroups.
func newCgroup(h cgroupHier, server string, memory int64, pids int) (_ *cgroup, err error) {
	name := cgroupName(server, cgroupSeq.Add(1))
	c := &cgroup{
		v2:      h.version == "v2",
		mem:     filepath.Join(h.memDir, cgroupParent, name),
		pids:    filepath.Join(h.pidsDir, cgroupParent, name),
		memRel:  filepath.Join(h.memRel, cgroupParent, name),
		pidsRel: filepath.Join(h.pidsRel, cgroupParent, name),
	}
	if c.v2 && h.enable {
		if err := enableControllers(h.memDir); err != nil {
			return nil, err
		}
	}
	// Live before it exists, so that a concurrent start's cleanStale
	// does not take it for a leftover.
	for _, d := range c.dirs() {
		liveCgroups.Store(d, true)
	}
	var made []string
	defer func() {
		if err != nil {
			for _, d := range made {
				os.Remove(d)
				unix.Rmdir(filepath.Dir(d)) // the parent, when this was its only child
			}
			for _, d := range c.dirs() {
				liveCgroups.Delete(d)
			}
		}
	}()
	for _, d := range c.dirs() {
		if err := makeCgroup(d, c.v2); err != nil {
			return nil, err
		}
		made = append(made, d)
	}
	set := func(file, v string, optional bool) error {
		err := writeFile(file, v)
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cgroup: writing %s to %s: %w", v, file, err)
		}
		return nil
	}
	if c.v2 {
		if memory > 0 {
			if err := set(filepath.Join(c.mem, "memory.max"), strconv.FormatInt(memory, 10), false); err != nil {
				return nil, err
			}
			// No swap: swap would let the server's memory exceed the limit.
			if err := set(filepath.Join(c.mem, "memory.swap.max"), "0", true); err != nil {
				return nil, err
			}
		}
		// An OOM kill takes the whole cgroup, not one process of it.
		if err := set(filepath.Join(c.mem, "memory.oom.group"), "1", true); err != nil {
			return nil, err
		}
	} else if memory > 0 {
		if err := set(filepath.Join(c.mem, "memory.limit_in_bytes"), strconv.FormatInt(memory, 10), false); err != nil {
			return nil, err
		}
		// Present when the kernel accounts swap (swapaccount=1); it must
		// not be below memory.limit_in_bytes, which is now set.
		if err := set(filepath.Join(c.mem, "memory.memsw.limit_in_bytes"), strconv.FormatInt(memory, 10), true); err != nil {
			return nil, err
		}
	}
	if pids > 0 {
		if err := set(filepath.Join(c.pids, "pids.max"), strconv.Itoa(pids), false); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// makeCgroup makes the cgroup dir and its parent (the "toolhost" cgroup,
// removed by the last start's remove: when that happens between the two
// mkdirs, it starts again), cleaning the parent's stale cgroups.
func makeCgroup(dir string, v2 bool) error {
	parent := filepath.Dir(dir)
	for attempt := 1; ; attempt++ {
		err := os.Mkdir(parent, 0o755)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroup %s: %w", parent, err)
		}
		if v2 {
			if err := enableControllers(parent); err != nil {
				if errors.Is(err, fs.ErrNotExist) && attempt < 5 {
					continue
				}
				return err
			}
		}
		cleanStale(parent)
		err = os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrNotExist) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		return nil
	}
}

// enableControllers adds memory and pids to dir's cgroup.subtree_control
// (v2) unless there.
func enableControllers(dir string) error {
	sub := filepath.Join(dir, "cgroup.subtree_control")
	if hasControllers(sub, "memory", "pids") {
		return nil
	}
	if err := writeFile(sub, "+memory +pids"); err != nil {
		return fmt.Errorf("cgroup: enabling memory and pids in %s: %w", sub, err)
	}
	return nil
}

// cleanStale removes the empty cgroups in parent that a toolhost which is
// no longer running left (SIGKILLed: it could not remove them), and this
// process's own leftovers (a start whose removal timed out). A cgroup that
// still has processes stays (rmdir(2) fails with EBUSY).
func cleanStale(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "toolhost-")
		if !e.IsDir() || !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		switch {
		case pid == self:
			if _, live := liveCgroups.Load(dir); live {
				continue
			}
		case unix.Kill(pid, 0) != unix.ESRCH:
			continue // that toolhost still runs (or the pid was reused)
		}
		os.Remove(dir)
	}
}

// counter reads the value of key in a flat-keyed cgroup file ("key value"
// lines, as memory.events, memory.oom_control and pids.events), 0 when
// the key is missing.
func counter(file, key string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// oomKills is how many processes the kernel's OOM killer killed in the
// cgroup (v2 memory.events oom_kill; v1 memory.oom_control oom_kill, Linux
// 4.13+, or under_oom where older kernels lack the counter).
func (c *cgroup) oomKills() int64 {
	if c.v2 {
		n, _ := counter(filepath.Join(c.mem, "memory.events"), "oom_kill")
		return n
	}
	file := filepath.Join(c.mem, "memory.oom_control")
	n, _ := counter(file, "oom_kill")
	if n == 0 {
		if u, _ := counter(file, "under_oom"); u > 0 {
			return u
		}
	}
	return n
}

// pidsRefused is how many forks and clones failed at pids.max (pids.events
// max; the v1 controller has the file too).
func (c *cgroup) pidsRefused() int64 {
	n, _ := counter(filepath.Join(c.pids, "pids.events"), "max")
	return n
}

// procs lists the processes in the cgroup (cgroup.procs of each of its
// directories).
func (c *cgroup) procs() []int {
	seen := map[int]bool{}
	var pids []int
	for _, d := range c.dirs() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && !seen[p] {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// member reports whether process pid is in the cgroup (its
// /proc/PID/cgroup names the cgroup's pids directory).
func (c *cgroup) member(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	own := parseProcCgroup(b)
	if c.v2 {
		return own[""] == c.pidsRel
	}
	return own["pids"] == c.pidsRel
}

// killAll SIGKILLs every process in the cgroup until it is empty (about 2
// seconds at most). v2 with cgroup.kill (Linux 5.14+) does it in one write;
// otherwise each process listed in cgroup.procs is signalled through a
// pidfd (pidfd_open(2)) after checking it is still in the cgroup, so that a
// reused pid is not signalled.
func (c *cgroup) killAll() {
	if c.v2 {
		if err := writeFile(filepath.Join(c.pids, "cgroup.kill"), "1"); err == nil {
			c.drain()
			return
		}
	}
	wait := time.Millisecond
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		pids := c.procs()
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			fd, err := unix.PidfdOpen(p, 0)
			if err != nil {
				continue
			}
			if c.member(p) {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// drain waits (up to 2 seconds) for the cgroup's processes to be gone.
func (c *cgroup) drain() {
	wait := time.Millisecond
	for deadline := time.Now().Add(2 * time.Second); len(c.procs()) > 0 && time.Now().Before(deadline); {
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// remove kills what is left in the cgroup and removes its directories,
// retrying while the kernel drains them (rmdir(2) fails with EBUSY until
// the last task is gone), for up to about 5 seconds. A directory it could
// not remove is left to cleanStale.
func (c *cgroup) remove() error {
	c.killAll()
	var errs []error
	for _, d := range c.dirs() {
		wait := time.Millisecond
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				liveCgroups.Delete(d)
				// The "toolhost" cgroup goes with its last child (EBUSY
				// while others remain), so that none is left behind.
				unix.Rmdir(filepath.Dir(d))
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				liveCgroups.Delete(d) // a leftover: cleanStale retries it
				errs = append(errs, fmt.Errorf("cgroup %s: %w", d, err))
				break
			}
			time.Sleep(wait)
			wait = min(2*wait, 50*time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
