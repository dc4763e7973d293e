//go:build wasip1

package pdk

import "github.com/toolhost/toolhost/pdk/internal/abi"

// The exports live here, in package pdk, not in the plugin's package main:
// //go:wasmexport works in any package linked into a -buildmode=c-shared
// wasip1 module (Go 1.24+), so importing pdk is enough to export them.

//go:wasmexport list_tools
func exportListTools() int32 { return abi.Run("list_tools") }

//go:wasmexport call_tool
func exportCallTool() int32 { return abi.Run("call_tool") }
