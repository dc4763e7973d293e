package nsinit

// installSeccomp installs the seccomp filter (the last step before execve;
// needs no_new_privs). STUB: replaced by the limits part.
func installSeccomp() error { return nil }

// setRlimits sets RLIMIT_AS and RLIMIT_NPROC (0: leave) and RLIMIT_CORE 0.
func setRlimits(as, nproc uint64) error { return nil }
