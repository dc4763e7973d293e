// Package sandbox runs WebAssembly plugins (Extism plugins of the hyper-mcp
// "v2" and mcp.run "v1" ABIs; see docs/PLUGIN-ABI.md) as toolhost backends:
// each Plugin is a transport.Transport, one Wasm call per operation, on
// wazero through the Extism go-sdk. An Engine holds the on-disk compilation
// cache that its plugins share; Inspect and CheckModule read a module
// without running a call.
//
// # The import rewrite
//
// A plugin calls the host through the Extism kernel imports, module
// "extism:host/env" (alloc, input_*, output_*, config_get, var_*,
// http_request, log_*, ...). The go-sdk instantiates its own module of that
// name in every runtime and refuses a second one, so its http_request
// (which checks only the first URL against AllowedHosts and follows
// redirects with http.DefaultClient) cannot be replaced by a host function
// of the same name. Connect therefore rewrites the module before compiling
// it: every function import from "extism:host/env" is renamed to import from
// sandbox's own module "toolhost:extism/env" instead (the import section is
// re-encoded, every other byte copied; internal/wasmfile.RewriteImports),
// and sandbox supplies every function of the kernel's env module under that
// name, with the same signatures and wire behaviour, and with sandbox's
// policies: allowed_hosts checked on every request and redirect, per-call
// HTTP caps, config and variables only as configured, guest logs to the
// plugin's logger (env.go, http.go, guestlog.go). The rewrite also lets
// kernel operations reach the instance's kernel through functions looked up
// once per instance rather than by name on every operation. The module is
// parsed (internal/wasmfile.Parse) before it is rewritten: its ABI is
// detected from its exports and its declared memory checked against the
// cap, so that a wrong file fails Connect with ErrABI or ErrMemoryLimit
// rather than at the first call.
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
