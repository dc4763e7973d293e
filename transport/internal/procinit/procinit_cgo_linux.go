//go:build linux && cgo

package procinit

// The shim in C, run before the Go runtime starts (issue 26, item 3).
//
// Re-executing this 50 MB program only to mount a procfs and execve the
// server cost ≈3.5–4.5 ms per stdio server start when the shim was Go: the
// runtime's start (its heap, threads and module data) and every package
// initialised before this one. A constructor in the ELF's .init_array runs
// after the dynamic loader and before main, i.e. before the Go runtime: it
// does the same steps as run (procinit_linux.go) with plain system calls
// and never returns to Go in the shim. The same technique as runc's
// nsexec (libcontainer/nsenter), for the same reason. Built only with cgo
// (toolhost links libc already: net and os/user); without cgo the Go init
// in procinit_linux.go is the shim, as before.
//
// It returns at once for every other program start: argv[0] is compared
// with "toolhost-procinit" (procinit.Arg0) and nothing else is done. glibc
// passes (argc, argv, envp) to .init_array functions; elsewhere (musl) the
// arguments are not defined, so the constructor reads /proc/self/cmdline
// instead only when argv[0]'s check cannot be trusted, and leaves the
// rest to the Go init when it cannot read it.

/*
#cgo CFLAGS: -O2 -Wall

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

extern char **environ;

// The status protocol of procinit.StatusFD: "stage\0errno\0message".
static void toolhost_procinit_fail(const char *stage, int err, const char *msg) {
	char buf[512];
	int n = snprintf(buf, sizeof buf, "%s%c%d%c%s", stage, 0, err, 0, msg);
	if (n > (int)sizeof buf - 1) n = sizeof buf - 1;
	if (n > 0) {
		ssize_t w = write(3, buf, (size_t)n);
		(void)w;
	}
	_exit(127);
}

// toolhost_procinit_drop_cap clears the ambient set and takes
// CAP_SYS_ADMIN out of the inheritable set when the parent raised it
// (capabilities(7), "Transformation of capabilities during execve()").
static int toolhost_procinit_drop_cap(void) {
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_ADMIN, 0, 0) != 1) {
		return 0; // not raised (or no ambient capabilities: kernel < 4.3)
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return errno;
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) != 0) return errno;
	data[CAP_SYS_ADMIN / 32].inheritable &= ~(1u << (CAP_SYS_ADMIN % 32));
	if (syscall(SYS_capset, &hdr, data) != 0) return errno;
	return 0;
}

#ifndef __GLIBC__
// toolhost_procinit_args reads argv from /proc/self/cmdline into buf;
// the count, or -1.
static int toolhost_procinit_args(char *buf, size_t size, char **argv, int max) {
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		len += (size_t)n;
		if (len == size - 1) { close(fd); return -1; } // too long for the shim: the Go init takes it
	}
	close(fd);
	buf[len] = 0;
	int argc = 0;
	for (size_t i = 0; i < len && argc < max - 1; i += strlen(buf + i) + 1) argv[argc++] = buf + i;
	argv[argc] = NULL;
	return argc;
}
#endif

__attribute__((constructor)) static void toolhost_procinit(int argc, char **argv, char **envp) {
	(void)envp;
#ifndef __GLIBC__
	// The arguments of an .init_array function are glibc's extension.
	static char buf[64 << 10];
	static char *args[1024];
	argc = toolhost_procinit_args(buf, sizeof buf, args, 1024);
	argv = args;
#endif
	if (argc < 4 || argv == NULL || argv[0] == NULL || strcmp(argv[0], "toolhost-procinit") != 0) return;
	const char *flags = argv[1], *path = argv[2];
	(void)fcntl(3, F_SETFD, FD_CLOEXEC); // procinit.StatusFD
	if (getpid() != 1) toolhost_procinit_fail("namespace", 0, "not PID 1 of a new PID namespace");
	// Private first: a mount namespace copies the parent's mounts with
	// their propagation, and a /proc mounted on a shared mount would
	// propagate to the parent's namespace (mount_namespaces(7)).
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		toolhost_procinit_fail("mount", errno, "making / private");
	}
	int err = EPERM;
	if (strcmp(flags, "mount-fault") != 0) {
		err = mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 ? 0 : errno;
	}
	if (err != 0) toolhost_procinit_fail("mount", err, "mounting a procfs on /proc");
	if ((err = toolhost_procinit_drop_cap()) != 0) toolhost_procinit_fail("namespace", err, "dropping CAP_SYS_ADMIN");
	execve(path, argv + 3, environ);
	toolhost_procinit_fail("exec", errno, "execve");
}
*/
import "C"
