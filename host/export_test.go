package host

// DisableValidation turns off argument and output validation, for the
// benchmarks that measure what it costs.
func DisableValidation(h *Host) { h.noValidate = true }
