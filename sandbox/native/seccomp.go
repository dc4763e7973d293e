//go:build linux

package native

import "github.com/toolhost/toolhost/sandbox/native/internal/nsinit"

// probeSeccomp reports whether the kernel offers seccomp filters with the
// actions the server's filter uses (Mechanisms.Seccomp); see
// nsinit.SeccompSupported.
func probeSeccomp() bool { return nsinit.SeccompSupported() }
