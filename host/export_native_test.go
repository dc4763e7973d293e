package host

import "github.com/toolhost/toolhost/sandbox/native"

// SandboxLauncher returns the native Launcher of backend name (nil: not
// sandboxed, or not planned yet).
func SandboxLauncher(h *Host, name string) *native.Launcher {
	b := h.named(name)
	if b == nil || b.sandbox == nil {
		return nil
	}
	b.sandbox.mu.Lock()
	defer b.sandbox.mu.Unlock()
	return b.sandbox.launcher
}

// SetPlanSpec replaces native.Spec.Plan for the host's sandboxes until
// the returned restore is called.
func SetPlanSpec(f func(*native.Spec) (*native.Plan, error)) (restore func()) {
	old := planSpec
	planSpec = f
	return func() { planSpec = old }
}
