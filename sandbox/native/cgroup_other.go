//go:build !linux

package native

// probeCgroup: no cgroups outside Linux.
func probeCgroup() string { return "" }
