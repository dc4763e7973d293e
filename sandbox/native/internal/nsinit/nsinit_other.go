//go:build !linux

package nsinit

// DevNodes are the guest paths of the "dev" mount's device nodes.
func DevNodes() []string { return nil }

// SeccompSupported reports whether seccomp filters can be installed: never
// outside Linux.
func SeccompSupported() bool { return false }
