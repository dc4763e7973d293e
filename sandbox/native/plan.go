package native

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/internal/units"
	"github.com/toolhost/toolhost/sandbox"
)

// Plan is a Spec made effective: every path the server sees with its mode
// and why, its hosts, its limits and the mechanisms that enforce them. The
// Launcher runs a Plan; toolhost check and status print it (Lines).
type Plan struct {
	Spec Spec
	// Paths are what the server sees, in mount order.
	Paths []Path
	// Memory and Pids are the effective limits; MemoryBy and PidsBy the
	// mechanism enforcing each ("cgroup v2", "cgroup v1", "rlimit AS",
	// "rlimit NPROC", "" when none).
	Memory   int64
	Pids     int
	MemoryBy string
	PidsBy   string
	// Mechanisms are what this kernel and process offer (Probe).
	Mechanisms Mechanisms
	// Missing lists, in best-effort mode, the mechanisms the sandbox wants
	// and the kernel does not offer (empty in strict mode: Plan fails).
	Missing []string

	entries []entry // Paths with what the child needs to make them
	home    string  // the server's HOME ("" when none)
	program string  // the resolved Spec.Command
}

// Path is one path the server sees.
type Path struct {
	Guest string
	Host  string // "" for a tmpfs, /proc, /dev, a generated file; a symbolic link's target
	Mode  sandbox.MountMode
	// Why is "runtime" (the runtime set), "allowed_paths", or "private"
	// (/tmp, /proc, /dev, generated /etc files), with details in
	// parentheses ("runtime (npm cache)").
	Why string
}

// Mechanisms are the isolation mechanisms this kernel and process offer.
type Mechanisms struct {
	UserNS   bool   // unprivileged user namespaces (or CAP_SYS_ADMIN)
	Landlock int    // Landlock ABI version, 0: none
	Seccomp  bool   // seccomp filters (SECCOMP_MODE_FILTER)
	Cgroup   string // "v2" (a delegated, writable subtree), "v1" (writable memory and pids hierarchies) or ""
}

// LandlockABI is the Landlock ABI version sandbox = "strict" requires: 7
// (file system rights including truncate and device ioctls, TCP connect
// rules, abstract Unix socket and signal scopes).
const LandlockABI = 7

// Plan checks the spec, computes the runtime set (see the package doc) and
// the limits' mechanisms. Errors:
//
//   - ErrSpec, naming the key: a mode other than strict or best-effort, a
//     negative memory or pids, a command not found, an allowed_paths entry
//     with a relative or unclean guest path, a relative or missing host
//     path, a quota (not supported for native servers), a bad mode, a
//     guest path that is /, under /proc or /dev, given twice, equal to a
//     path of the runtime set or above one (/etc: its mount points would
//     be made in the host directory);
//   - ErrUnavailable, naming the mechanism and what to do: user namespaces
//     are not offered (in either mode: nothing can be built without them);
//     in strict mode, Landlock below ABI LandlockABI or seccomp.
func (s *Spec) Plan() (*Plan, error) {
	p := &Plan{Spec: *s, Memory: s.Memory, Pids: s.Pids}
	p.Spec.Env = append([]string(nil), s.Env...)
	switch s.Mode {
	case ModeStrict, ModeBestEffort:
	case "", ModeOff:
		return nil, fmt.Errorf("%w: server %q: sandbox = %q runs no native sandbox", ErrSpec, s.Name, ModeOff)
	default:
		return nil, fmt.Errorf("%w: server %q: sandbox = %q: want %q, %q or %q", ErrSpec, s.Name, s.Mode, ModeOff, ModeStrict, ModeBestEffort)
	}
	if s.Memory < 0 {
		return nil, fmt.Errorf("%w: server %q: memory is negative (%d bytes)", ErrSpec, s.Name, s.Memory)
	}
	if s.Pids < 0 {
		return nil, fmt.Errorf("%w: server %q: pids is negative (%d)", ErrSpec, s.Name, s.Pids)
	}
	if p.Memory == 0 {
		p.Memory = DefaultMemory
	}
	if p.Pids == 0 {
		p.Pids = DefaultPids
	}
	prog, err := s.resolveCommand()
	if err != nil {
		return nil, err
	}
	p.program = prog
	allowed, err := s.allowedEntries()
	if err != nil {
		return nil, err
	}

	p.Mechanisms = probe()
	if err := p.checkMechanisms(); err != nil {
		return nil, err
	}
	switch p.Mechanisms.Cgroup {
	case "v2", "v1":
		p.MemoryBy, p.PidsBy = "cgroup "+p.Mechanisms.Cgroup, "cgroup "+p.Mechanisms.Cgroup
	default:
		p.MemoryBy, p.PidsBy = "rlimit AS", "rlimit NPROC"
		if os.Geteuid() == 0 {
			// The kernel does not apply RLIMIT_NPROC to the initial user
			// namespace's root, which the server's uid 0 maps to
			// (setrlimit(2), fork(2): EAGAIN "unless the caller has
			// CAP_SYS_ADMIN or CAP_SYS_RESOURCE, or the real user ID is 0").
			const why = "a pids limit (no writable cgroup, and RLIMIT_NPROC does not bind root)"
			if s.Mode == ModeStrict {
				return nil, fmt.Errorf("%w: server %q: sandbox = %q needs %s: run toolhost where it may create cgroups, or set sandbox = %q",
					ErrUnavailable, s.Name, ModeStrict, why, ModeBestEffort)
			}
			p.PidsBy = ""
			p.Missing = append(p.Missing, why)
		}
	}

	p.home = envValue(s.Env, "HOME")
	if p.home == "" {
		p.home, _ = os.UserHomeDir()
	}
	entries, err := p.runtimeSet(allowed)
	if err != nil {
		return nil, err
	}
	p.entries = entries
	for _, e := range entries {
		p.Paths = append(p.Paths, e.Path)
	}
	return p, nil
}

func (p *Plan) checkMechanisms() error {
	m, name := p.Mechanisms, p.Spec.Name
	if !m.UserNS {
		return fmt.Errorf("%w: server %q: user namespaces are not offered (/proc/sys/user/max_user_namespaces is 0, or the kernel refuses unprivileged ones): "+
			"allow them (sysctl user.max_user_namespaces=15000, kernel.unprivileged_userns_clone=1) or set sandbox = %q for this server",
			ErrUnavailable, name, ModeOff)
	}
	var missing []string
	if m.Landlock < LandlockABI {
		what := "Landlock"
		if m.Landlock > 0 {
			what = fmt.Sprintf("Landlock ABI %d (the kernel offers ABI %d)", LandlockABI, m.Landlock)
		}
		missing = append(missing, what)
	}
	if !m.Seccomp {
		missing = append(missing, "seccomp")
	}
	if len(missing) == 0 {
		return nil
	}
	if p.Spec.Mode == ModeStrict {
		return fmt.Errorf("%w: server %q: sandbox = %q needs %s, which this kernel does not offer: "+
			"use a kernel with them (Landlock must be in the lsm= boot parameter), or set sandbox = %q to run with what it offers",
			ErrUnavailable, name, ModeStrict, strings.Join(missing, " and "), ModeBestEffort)
	}
	p.Missing = missing
	return nil
}

// resolveCommand returns Spec.Command resolved: looked up in toolhost's
// PATH when it has no slash, symbolic links followed.
func (s *Spec) resolveCommand() (string, error) {
	c := s.Command
	if c == "" {
		return "", fmt.Errorf("%w: server %q: command is empty", ErrSpec, s.Name)
	}
	if !strings.Contains(c, "/") {
		lp, err := exec.LookPath(c)
		if err != nil {
			return "", fmt.Errorf("%w: server %q: command %q not found in PATH", ErrSpec, s.Name, c)
		}
		c = lp
	}
	if !filepath.IsAbs(c) {
		abs, err := filepath.Abs(c)
		if err != nil {
			return "", fmt.Errorf("%w: server %q: command %q: %v", ErrSpec, s.Name, c, err)
		}
		c = abs
	}
	r, err := filepath.EvalSymlinks(c)
	if err != nil {
		return "", fmt.Errorf("%w: server %q: command %q: %v", ErrSpec, s.Name, c, err)
	}
	return r, nil
}

// allowedEntries checks allowed_paths and returns them as entries.
func (s *Spec) allowedEntries() ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	for _, m := range s.Mounts {
		key := fmt.Sprintf("server %q: allowed_paths %q", s.Name, m.Guest)
		switch {
		case !filepath.IsAbs(m.Guest) || filepath.Clean(m.Guest) != m.Guest:
			return nil, fmt.Errorf("%w: %s: the guest path must be absolute and clean", ErrSpec, key)
		case m.Guest == "/":
			return nil, fmt.Errorf("%w: %s: the guest path cannot be /", ErrSpec, key)
		case under(m.Guest, "/proc") || under(m.Guest, "/dev"):
			return nil, fmt.Errorf("%w: %s: /proc and /dev are the sandbox's own", ErrSpec, key)
		case seen[m.Guest]:
			return nil, fmt.Errorf("%w: %s is given twice", ErrSpec, key)
		case !filepath.IsAbs(m.Host):
			return nil, fmt.Errorf("%w: %s: host path %q is not absolute", ErrSpec, key, m.Host)
		case m.Quota != 0:
			return nil, fmt.Errorf("%w: %s: mount_quota is not supported for native servers", ErrSpec, key)
		case m.Mode != sandbox.MountReadOnly && m.Mode != sandbox.MountReadWrite:
			return nil, fmt.Errorf("%w: %s: mode %d is neither ro nor rw", ErrSpec, key, m.Mode)
		}
		seen[m.Guest] = true
		host, err := filepath.EvalSymlinks(m.Host)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: host path: %v", ErrSpec, key, err)
		}
		out = append(out, entry{Path: Path{Guest: m.Guest, Host: host, Mode: m.Mode, Why: "allowed_paths"}, kind: "bind"})
	}
	// A mount whose host directory lies inside another, read-write one's
	// would let the server replace it (or a directory above it) with a
	// symbolic link pointing anywhere on the host, followed at the next
	// start.
	for _, a := range out {
		for _, b := range out {
			if a.Mode == sandbox.MountReadWrite && b.Host != a.Host && under(b.Host, a.Host) {
				return nil, fmt.Errorf("%w: server %q: allowed_paths %q: its host directory %s is inside %q's, which is read-write: the server could replace it with a symbolic link to anywhere; mount a directory outside it",
					ErrSpec, s.Name, b.Guest, b.Host, a.Guest)
			}
		}
	}
	return out, nil
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// guestPath returns where host path h (symbolic links resolved) is seen
// inside the sandbox: through the bind mount nearest to it, unless a mount
// below that one's guest path covers it.
func (p *Plan) guestPath(h string) (string, bool) {
	r, err := filepath.EvalSymlinks(h)
	if err != nil {
		// A missing file: where it would be (its execve then fails with
		// ENOENT, reported as such).
		d, derr := filepath.EvalSymlinks(filepath.Dir(h))
		if derr != nil {
			return "", false
		}
		r = filepath.Join(d, filepath.Base(h))
	}
	var chosen *entry
	for i := range p.entries {
		e := &p.entries[i]
		if e.kind == "bind" && under(r, e.Host) && (chosen == nil || len(e.Host) > len(chosen.Host)) {
			chosen = e
		}
	}
	if chosen == nil {
		return "", false
	}
	g := filepath.Join(chosen.Guest, strings.TrimPrefix(r, chosen.Host))
	for _, e := range p.entries {
		if len(e.Guest) > len(chosen.Guest) && under(g, e.Guest) {
			return "", false
		}
	}
	return g, true
}

// Lines describes the plan for people, one line each (toolhost check):
// the mode, each path with its mode and why, the hosts, the limits with
// their mechanisms, the mechanisms offered and, in best-effort mode, what
// is missing.
func (p *Plan) Lines() []string {
	out := []string{"sandbox: " + string(p.Spec.Mode)}
	for _, e := range p.entries {
		switch {
		case e.kind == "symlink":
			out = append(out, fmt.Sprintf("path %s -> %s (%s)", e.Guest, e.Host, e.Why))
		case e.Host != "":
			out = append(out, fmt.Sprintf("path %s %s %s (%s)", e.Guest, e.Mode, e.Host, e.Why))
		default:
			out = append(out, fmt.Sprintf("path %s %s (%s)", e.Guest, e.Mode, e.Why))
		}
	}
	if len(p.Spec.Hosts) == 0 {
		out = append(out, "hosts: none (a network namespace with only its own loopback)")
	} else {
		out = append(out, "hosts: "+strings.Join(p.Spec.Hosts, ", ")+" (through toolhost's proxy at "+ProxyAddr+")")
	}
	out = append(out, fmt.Sprintf("memory: %s (%s)", units.Bytes(p.Memory), orNone(p.MemoryBy)))
	out = append(out, fmt.Sprintf("pids: %d (%s)", p.Pids, orNone(p.PidsBy)))
	m := p.Mechanisms
	mech := []string{fmt.Sprintf("user namespaces: %s", yesNo(m.UserNS)), fmt.Sprintf("Landlock ABI %d", m.Landlock),
		"seccomp: " + yesNo(m.Seccomp), "cgroup: " + orNone(m.Cgroup)}
	out = append(out, "mechanisms: "+strings.Join(mech, ", "))
	if len(p.Missing) > 0 {
		out = append(out, "missing (best-effort): "+strings.Join(p.Missing, ", "))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// sortEntries orders entries by guest path: a path sorts before every
// path below it, so parents are mounted before their children.
func sortEntries(es []entry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Guest < es[j].Guest })
}
