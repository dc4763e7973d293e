//go:build !linux

package nsinit

// DevNodes are the guest paths of the "dev" mount's device nodes.
func DevNodes() []string { return nil }
