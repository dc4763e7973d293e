// Package native is the native enforcer of toolhost's sandbox grammar: it
// runs a stdio MCP server's process (npx, uvx, a binary, a script) with the
// capabilities of a sandbox.Capabilities — allowed_paths, allowed_hosts,
// memory — plus a process count (pids), as the Wasm engine of package
// sandbox runs a plugin with them. One grammar, two enforcers.
//
// A sandboxed server is started by re-executing toolhost itself
// (/proc/self/exe, see internal/nsinit) as the first process of new user,
// PID, mount, network, IPC and UTS namespaces. That process builds the
// server's root file system (the runtime set read-only, the allowed paths
// with their modes, a private /tmp, a fresh /proc, a minimal /dev),
// pivot_root(2)s into it, brings up the namespace's loopback, opens the
// egress listeners toolhost relays for, applies rlimits, a Landlock ruleset
// (the second wall), no_new_privs, drops every capability and installs a
// seccomp filter, then execve(2)s the server in the same process (PID 1 of
// its namespace). toolhost puts it in cgroups for memory and pids where
// the kernel allows, relays its allowed egress (package sandbox/egress's
// allowlist, shared with plugins), and classifies its exit.
//
// # What a sandboxed server sees
//
// Spec.Plan computes it; Plan.Lines (toolhost check) prints it. In mount
// order, by guest path (a path before the paths below it):
//
//   - the runtime set, read-only: /usr, /bin, /sbin, /lib, /lib32, /lib64
//     and /libx32 where they exist (the usrmerge symbolic links, /bin ->
//     usr/bin, recreated as links); from /etc only ssl/certs,
//     ssl/openssl.cnf, ca-certificates*, alternatives, ld.so.cache,
//     ld.so.conf*, localtime, nsswitch.conf, mime.types and os-release
//     (symbolic links resolved); the program's installation when it is
//     outside those (the resolved program's directory and, when that is
//     a bin or sbin directory, the lib, lib64, libexec and share
//     directories beside it: a pyenv version, a Node.js install; not the
//     whole prefix; never /, HOME or a directory above HOME, then only
//     the program), and the same for a script's interpreter (its #! line;
//     for /usr/bin/env, the program it runs, looked up in the server's
//     PATH); the pyenv root (PYENV_ROOT, else $HOME/.pyenv) when the
//     program is under it; the language caches that exist, each an
//     overlay whose lower layer is the host's directory (never written)
//     and whose upper layer is a private tmpfs (npm and uv write while
//     they read): npm (npm_config_cache or NPM_CONFIG_CACHE in the
//     server's env, else $HOME/.npm), uv (UV_CACHE_DIR, else
//     $HOME/.cache/uv) and $HOME/.local/share/uv; without allowed_hosts
//     npm_config_offline=true and UV_OFFLINE=1 are added to the env
//     (with them, npm_config_prefer_offline=true), unless it sets them;
//   - HOME (HOME in the server's env, else toolhost's): an empty private
//     tmpfs, read-write, under which the caches above are bound (none when
//     an allowed path is HOME or above it); HOME is added to the server's
//     env when it has none;
//   - /tmp: a private tmpfs, read-write, capped at the memory limit
//     (unless an allowed path is /tmp);
//   - /proc: a fresh procfs of the server's PID namespace (it lists only
//     the server's processes), with sys, sysrq-trigger, irq and bus
//     read-only;
//   - /dev: a read-only tmpfs with the device nodes null, zero, full,
//     random, urandom and tty bound from the host, the links fd, stdin,
//     stdout and stderr into /proc/self/fd, and a private /dev/shm tmpfs;
//   - generated, read-only: /etc/passwd and /etc/group (toolhost's uid and
//     gid, which the user namespace maps to themselves, with HOME),
//     /etc/hosts (localhost) and /etc/resolv.conf (the egress part
//     replaces these two when the server has allowed hosts);
//   - allowed_paths, each at its guest path, read-only or read-write.
//
// Every bind mount is nosuid and nodev; the root itself is a read-only
// tmpfs. Nothing else of the host is visible. Landlock repeats the same
// list (read and execute on the read-only paths, all rights on the
// read-write ones and the device nodes, listing directory names from /
// down), so a path that a mount mistake exposed stays closed.
//
// # Mechanisms
//
// User namespaces are needed in both modes (nothing can be built without
// them); strict mode also needs Landlock ABI 7 and seccomp and fails with
// ErrUnavailable naming what is missing; best-effort lists what is missing
// in Plan.Missing. Memory and pids are enforced by cgroups where toolhost
// can create them (v2 delegated, else v1), else by the rlimits AS and
// NPROC.
//
// Launcher implements transport.Launcher; the host sets one on every stdio
// server whose effective sandbox mode is not "off".
package native
