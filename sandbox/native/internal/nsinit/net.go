package nsinit

// setupNetwork brings lo up (c.LoopbackUp) and binds c.Listen, sending the
// listening sockets to the parent on ListenFD. STUB: replaced by the egress
// part.
func setupNetwork(c *Config) error { return nil }
