package sandbox

import (
	"runtime"
	"time"
)

// Defaults of a Manifest's zero fields (a [plugins.NAME] table's unset
// keys), each defined here, where it is enforced.
const (
	// DefaultTimeout is the deadline of one call whose context has none
	// when Manifest.Timeout is unset: 30s. The host gives every call its
	// own deadline ([host] call_timeout, default 30s), so this applies to
	// other callers.
	DefaultTimeout = 30 * time.Second

	// DefaultStartTimeout bounds the warm-up of a plugin's first instance
	// (its _initialize and tool listing) at a Connect whose context has no
	// deadline: 30s, or Manifest.Timeout when longer. The host gives
	// Connect its startup_timeout instead.
	DefaultStartTimeout = 30 * time.Second

	// DefaultMemory caps a plugin's linear memory when memory is unset:
	// 256 MiB (4096 pages), room for a Go plugin (≈3.2 MiB to start) to parse
	// and build sizeable documents, while N instances of a runaway plugin
	// stay bounded at N × 256 MiB. The same cap applies to the instance's
	// Extism kernel memory (wazero's limit is per runtime).
	DefaultMemory = 256 << 20

	// DefaultMaxOutput caps one result of a plugin (max_output unset): 4
	// MiB. The sandbox enforces it (a guest's output_set beyond the cap
	// fails the call); the host's own default for servers has the same
	// value.
	DefaultMaxOutput = 4 << 20

	// DefaultMaxOpenFiles caps the files one instance may hold open in its
	// mounts (max_open_files unset): 128. The host-wide worst case is the
	// sum over plugins of max_open_files × instances.
	DefaultMaxOpenFiles = 128

	// DefaultMaxHTTPRequests caps one call's http_request calls
	// (max_http_requests unset): 64.
	DefaultMaxHTTPRequests = 64

	// DefaultMaxHTTPBytes caps the response bodies one call reads through
	// http_request, in all (max_http_bytes unset): 64 MiB. One body is
	// also capped at a quarter of the memory cap.
	DefaultMaxHTTPBytes = 64 << 20

	// PageSize is the WebAssembly page size: memory caps are rounded up to
	// whole pages.
	PageSize = 65536

	// ProtocolVersion is the MCP revision a plugin's InitializeResult
	// reports: plugins speak MCP result shapes, not the handshake.
	ProtocolVersion = "2025-11-25"
)

// DefaultInstances is the pool size when instances is unset:
// runtime.NumCPU(). Instances are created lazily — one is warmed by Connect,
// more only while calls overlap — so an idle or sequential plugin costs one
// instance (≈4 MiB RSS for a Go plugin), while concurrent calls (an agent's
// parallel tool calls, a tool waiting on HTTP) are not queued behind one
// another. A plugin whose tools rely on sharing global state across calls
// should set instances = 1.
func DefaultInstances() int { return runtime.NumCPU() }
