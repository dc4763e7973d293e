package sandbox

import (
	"runtime"
)

// Defaults for a [plugins.NAME] table's unset limits.
const (
	// DefaultMemory caps a plugin's linear memory when memory is unset:
	// 256 MiB (4096 pages), room for a Go plugin (≈3.2 MiB to start) to parse
	// and build sizeable documents, while N instances of a runaway plugin
	// stay bounded at N × 256 MiB. The same cap applies to the instance's
	// Extism kernel memory (wazero's limit is per runtime).
	DefaultMemory = 256 << 20

	// DefaultMaxOutput caps one result (max_output unset): 4 MiB.
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
