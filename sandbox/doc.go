// Package sandbox runs WebAssembly plugins (Extism plugins of the hyper-mcp
// "v2" and mcp.run "v1" ABIs; see docs/PLUGIN-ABI.md) as toolhost backends:
// each Plugin is a transport.Transport, one Wasm call per operation, on
// wazero. An Engine holds the on-disk compilation
// cache that its plugins share; Inspect and CheckModule read a module
// without running a call.
//
// # The runtime and the kernel
//
// A plugin calls the host through the Extism kernel imports, module
// "extism:host/env" (alloc, input_*, output_*, config_get, var_*,
// http_request, log_*, ...), and optionally WASI preview 1. sandbox drives
// wazero itself: each plugin has its own wazero runtime (the Engine's
// compilation cache, close-on-context-done, the plugin's memory cap in
// pages) holding WASI and sandbox's own "extism:host/env" host module,
// which provides every function of the Extism kernel with the same
// signatures and wire behaviour and with sandbox's policies: allowed_hosts
// checked on every request and redirect, per-call HTTP caps, config and
// variables only as configured, guest logs to the plugin's logger (env.go,
// http.go, guestlog.go). The kernel's memory and blocks are Go (kernel.go),
// so a call is one Go→Wasm entry, the guest's export, looked up once per
// instance. Connect checks every import against those host modules (name
// and signature; anything else fails with ErrABI). The Extism go-sdk is not
// on this path: the package's tests use it as the ABI oracle
// (TestExtismOracle). The module is parsed (internal/wasmfile.Parse) before
// it is compiled: its ABI is detected from its exports and its declared
// memory checked against the cap, so that a wrong file fails Connect with
// ErrABI or ErrMemoryLimit rather than at the first call.
//
// # The instance pool
//
// A plugin is compiled once (Connect; cached on disk by the Engine) and
// runs its calls on instances of the compiled module. Up to instances
// (config; default DefaultInstances) calls run at once, each on its own
// instance; a call that finds every slot taken waits for one within its
// context's deadline (then ErrBusy, which is not a failure of the plugin).
// With isolation = "pooled" (the default) an instance goes back to the pool
// after a call and the next call reuses it, so guest globals persist
// between calls; with "fresh" every call gets a new instance. Connect warms
// the first instance (the guest's _initialize and its tool list); the
// others are created on demand. An instance whose call timed out, trapped,
// ran out of memory or was aborted by a host function is discarded, never
// reused: the next call gets a new one. Every instance has its memory cap
// (memory) as a page limit, and the runtime is built with
// close-on-context-done, so a guest still running at its call's deadline
// is stopped rather than left spinning. The deadline is the caller's (the
// host gives every call one); a caller without one gets the plugin's
// timeout.
package sandbox
