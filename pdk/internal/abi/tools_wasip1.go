//go:build wasip1

package abi

// The toolhost host-tools module (not part of the Extism kernel): a plugin the
// host grants it to may call the host's tools. See docs/PLUGIN-ABI.md
// ("toolhost:host/tools").

//go:wasmimport toolhost:host/tools call
func toolhostToolsCall(request uint64) uint64

// ToolsCall sends one request (JSON, see docs/PLUGIN-ABI.md) to the host's
// tools module and returns its answer (JSON). The host frees the request
// block.
func ToolsCall(request []byte) []byte {
	return take(toolhostToolsCall(alloc(request)))
}
