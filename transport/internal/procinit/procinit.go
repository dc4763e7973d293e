// Package procinit is the first code a stdio server's process runs on
// Linux: re-executed from /proc/self/exe as PID 1 of new PID and mount
// namespaces, it mounts a procfs of its PID namespace on /proc and
// execve()s the server (see transport's contain_linux.go).
//
// With cgo (toolhost's builds) the shim is a C constructor that runs
// before the Go runtime starts (procinit_cgo_linux.go); without cgo it is
// this package's init (procinit_linux.go).
//
// It is a package of its own, importing only the standard library's
// lowest layers, so that its init runs before the packages of the program
// that are costly to initialise (the Go specification, "Package
// initialization": a package is initialised once its imports are, in
// import-path order among those ready).
package procinit

// Arg0 is the argv[0] that marks the re-executed child: os.Args is
// [Arg0, flags, path, argv...]. It has no slash, while the argv[0] of every
// server the transport starts is the program's path.
const Arg0 = "toolhost-procinit"

// StatusFD is the child's descriptor of the status pipe (the parent's
// cmd.ExtraFiles[0]). It is close-on-exec in the child: EOF on the read end
// means the server's execve succeeded. On failure the child writes
// "stage\x00errno\x00message" and exits with status 127 (errno in decimal,
// 0 for none; the message says what failed, without the errno's text,
// which the parent adds); stage is
// "namespace" or "mount" (the containment level is not allowed here) or
// "exec" (the server cannot be executed).
const StatusFD = 3

// Exe is the executable re-executed as the child: this one, as the kernel
// knows it, even if its file was replaced or removed since it started.
const Exe = "/proc/self/exe"

// FlagMountFault in the flags argument makes the child report its procfs
// mount as refused (EPERM) without trying it; tests use it to reach the
// fallback. "-" means no flags.
const FlagMountFault = "mount-fault"
