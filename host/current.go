package host

import "github.com/toolhost/toolhost/config"

// Config returns the configuration in force: the one New was given, or the
// last one Host.Apply applied. It is shared, not copied: read it, never
// change it. A gateway follows it to serve the [serve] profiles and tokens
// an Apply adds (Apply emits an EventCatalogue when [serve] changed).
func (h *Host) Config() *config.Config { return h.config() }
