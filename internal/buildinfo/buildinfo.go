// Package buildinfo holds what identifies this build of toolhost to others:
// the version the MCP client reports in its initialize request
// (clientInfo.version, MCP 2025-11-25, basic/lifecycle) and that keys the
// Wasm tool-list cache (docs/PLUGIN-ABI.md, "Tool-list cache").
package buildinfo

// Version is toolhost's release version, "0.1.0" unless set at link time
// with -ldflags "-X github.com/toolhost/toolhost/internal/buildinfo.Version=V".
var Version = "0.1.0"
