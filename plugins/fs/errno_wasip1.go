//go:build wasip1

package main

import (
	"errors"
	"syscall"
)

// notCapable reports WASI's ENOTCAPABLE, which the runtime returns for a
// path outside every preopened directory or a right the mount lacks.
func notCapable(err error) bool { return errors.Is(err, syscall.ENOTCAPABLE) }
