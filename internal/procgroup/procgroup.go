// Package procgroup inspects a process group (POSIX setpgid(2)) on Linux
// through /proc (proc(5): /proc/PID/stat, fields state and pgrp): which of
// its processes are still alive. The stdio transport runs each MCP server in
// a group of its own and signals the group; tests check that no member
// outlives it.
package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether any live (not zombie) process is left in process
// group pgid. Zombies count as gone: they hold no resources and are reaped by
// their parent (or init), which toolhost cannot do for orphans.
func Alive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	return len(Members(pgid)) > 0
}

// Members lists the live (not zombie) processes in process group pgid,
// read from /proc. Where /proc is not available it reports pgid itself while
// the group can be signalled. The stdio transport's Close uses it (through
// Alive) to find the members that outlive the group's leader; tests use it
// to check that nothing outlives a Transport.
func Members(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return []int{pgid}
		}
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
