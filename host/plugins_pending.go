package host

import "errors"

// buildPlugins is replaced when the sandbox lands.
func (h *Host) buildPlugins() error {
	return errors.New("wasm plugins are not supported by this build yet")
}
