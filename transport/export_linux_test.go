package transport

// NewStdioOwnContainment is NewStdio with levels tried and kept apart from
// the process's (Containment); level names the one it has kept. With
// mountFault the procfs shim reports its mount of /proc as refused (EPERM)
// without trying it.
func NewStdioOwnContainment(cmd Command, opts *StdioOptions, mountFault bool) (s *Stdio, level func() string) {
	s = NewStdio(cmd, opts)
	s.contain = &containment{mountFault: mountFault}
	return s, func() string { return levelName(s.contain.level.Load()) }
}

// NewStdioAtLevel is NewStdio starting at the containment level named
// (see Containment), falling back from it as usual; level names the one it
// has kept.
func NewStdioAtLevel(cmd Command, opts *StdioOptions, name string) (s *Stdio, level func() string) {
	s = NewStdio(cmd, opts)
	s.contain = &containment{}
	for l := containPIDNS; l <= containNone; l++ {
		if levelName(l) == name {
			s.contain.level.Store(l)
		}
	}
	return s, func() string { return levelName(s.contain.level.Load()) }
}
