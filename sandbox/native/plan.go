package native

import (
	"errors"

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
}

// Path is one path the server sees.
type Path struct {
	Guest string
	Host  string // "" for a tmpfs, /proc or /dev
	Mode  sandbox.MountMode
	// Why is "runtime" (the runtime set), "allowed_paths", or "private"
	// (/tmp, /proc, /dev, generated /etc files).
	Why string
}

// Mechanisms are the isolation mechanisms this kernel and process offer.
type Mechanisms struct {
	UserNS   bool   // unprivileged user namespaces (or CAP_SYS_ADMIN)
	Landlock int    // Landlock ABI version, 0: none
	Seccomp  bool   // seccomp filters (SECCOMP_MODE_FILTER)
	Cgroup   string // "v2" (a delegated, writable subtree), "v1" (writable memory and pids hierarchies) or ""
}

var errTODO = errors.New("native: not implemented yet")

// Probe reports the mechanisms this kernel and process offer; the result
// is computed once per process.
func Probe() Mechanisms { return Mechanisms{} }

// Plan checks the spec (ErrSpec), computes the runtime set and the limits'
// mechanisms, and in strict mode fails with ErrUnavailable when a
// mechanism is missing.
func (s *Spec) Plan() (*Plan, error) { return nil, errTODO }

// Lines describes the plan for people, one line each (toolhost check).
func (p *Plan) Lines() []string { return nil }
