package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Bounds of a sandboxed server's limits.
const (
	// minServerMemory is the smallest memory key a server may have: less
	// does not start any interpreter (a typo such as "512KiB" for
	// "512MiB" is caught at load, not as a server killed at start).
	minServerMemory = 16 << 20
	// maxServerPids is the kernel's largest pid_max (proc(5),
	// /proc/sys/kernel/pid_max: 2^22 on 64-bit systems).
	maxServerPids = 1 << 22
)

// sandboxKeys are the keys of a [servers.NAME] table that configure its
// native sandbox besides sandbox itself.
var sandboxKeys = []string{"allowed_paths", "allowed_hosts", "memory", "pids"}

// hostSandbox checks [host] sandbox and fills in its default, "off".
func (l *loader) hostSandbox(h *Host) {
	switch h.Sandbox {
	case "":
		h.Sandbox = SandboxOff
	case SandboxOff, SandboxStrict, SandboxBestEffort:
	default:
		l.errorf(toml.Key{"host", "sandbox"}, "%s", badMode(h.Sandbox))
		h.Sandbox = SandboxOff // the servers are checked as if it were unset
	}
	l.defaultSandbox = h.Sandbox
}

func badMode(m string) string {
	return fmt.Sprintf("%q is not a sandbox mode: use \"off\" (no sandbox), \"strict\" (sandboxed; a mechanism the kernel lacks is a start failure) or \"best-effort\" (sandboxed with what the kernel offers)", m)
}

// serverSandbox checks the sandbox keys of a [servers.NAME] table: on an
// HTTP server every one is an error; on a stdio server the mode is filled
// in from [host] sandbox, and the other keys need an effective mode other
// than "off" (nothing would enforce them). allowed_paths and
// allowed_hosts have the plugins' grammar and checks.
func (l *loader) serverSandbox(s *Server, key toml.Key) {
	k := func(name string) toml.Key { return append(key[:len(key):len(key)], name) }
	set := map[string]bool{
		"sandbox":       s.Sandbox != "",
		"allowed_paths": len(s.AllowedPaths) > 0,
		"allowed_hosts": len(s.AllowedHosts) > 0,
		"memory":        s.Memory != 0,
		"pids":          s.Pids != 0,
		"mount_quota":   len(s.MountQuota) > 0,
	}
	for f := range set {
		set[f] = set[f] || l.isSet(k(f))
	}
	if set["mount_quota"] {
		l.errorf(k("mount_quota"), "is not supported for servers: the native sandbox has no per-mount quota (only plugins have one); remove it")
	}
	if !s.IsStdio() {
		for _, f := range append([]string{"sandbox"}, sandboxKeys...) {
			if set[f] {
				l.errorf(k(f), "is only used by stdio servers (command): the sandbox confines a child process; remove it")
			}
		}
		s.Sandbox, s.Mounts = "", nil
		return
	}
	explicit := s.Sandbox != ""
	switch s.Sandbox {
	case "":
		s.Sandbox = l.defaultSandbox
		if s.Sandbox == "" {
			s.Sandbox = SandboxOff
		}
	case SandboxOff, SandboxStrict, SandboxBestEffort:
	default:
		if !l.reported(k("sandbox")) {
			l.errorf(k("sandbox"), "%s", badMode(s.Sandbox))
		}
		s.Sandbox = SandboxOff
		return // the other keys are not judged against a mode that is wrong
	}
	l.allowedHosts(k("allowed_hosts"), s.AllowedHosts)
	s.Mounts = l.allowedPaths(k("allowed_paths"), s.AllowedPaths)
	for _, m := range s.Mounts {
		switch {
		case m.Guest == "/":
			l.errorf(append(k("allowed_paths"), m.Guest), "a server's guest path cannot be /: the sandbox builds its root (the runtime set); mount at a directory such as \"/work\"")
		case underDir(m.Guest, "/proc") || underDir(m.Guest, "/dev"):
			l.errorf(append(k("allowed_paths"), m.Guest), "%q is under /proc or /dev, which the sandbox makes for the server: mount elsewhere", m.Guest)
		}
	}
	if set["memory"] && s.Memory < minServerMemory && !l.reported(k("memory")) {
		l.errorf(k("memory"), "%s is too small to start a server: use at least %q, or remove the key for the sandbox's default (1GiB)", s.Memory, Size(minServerMemory).String())
	}
	if set["pids"] && (s.Pids < 1 || s.Pids > maxServerPids) && !l.reported(k("pids")) {
		l.errorf(k("pids"), "%d is out of range: use 1 to %d processes and threads, or remove the key for the sandbox's default (256)", s.Pids, maxServerPids)
	}
	if s.Sandbox != SandboxOff {
		return
	}
	why := "[host] sandbox is \"off\""
	if explicit {
		why = "sandbox is \"off\""
	}
	for _, f := range sandboxKeys {
		if set[f] && !l.reported(k(f)) {
			l.errorf(k(f), "is not enforced without a sandbox (%s): set sandbox = \"strict\" (or \"best-effort\") on this server, or remove it", why)
		}
	}
}

// underDir reports whether p is dir or below it.
func underDir(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
