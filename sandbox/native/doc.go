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
// Launcher implements transport.Launcher; the host sets one on every stdio
// server whose effective sandbox mode is not "off".
package native
