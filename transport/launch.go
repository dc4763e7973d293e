package transport

import "os/exec"

// A Launcher starts a stdio server's process in place of the default
// containment (see Containment): the native sandbox of package
// sandbox/native is one. Set it in StdioOptions.Launcher; nil keeps the
// default.
type Launcher interface {
	// Launch starts cmd, whose Path, Args, Env, Dir and standard streams are
	// set (SysProcAttr and ExtraFiles are the launcher's), and returns once
	// the server's own program runs (its execve succeeded) or has failed to
	// start. It is called on a goroutine locked to its OS thread that stays
	// locked until the process is reaped (the death signal is tied to the
	// thread that forked the child). The launcher may add to cmd.Env.
	// Errors are wrapped in ErrStart by the caller; one that wraps
	// ErrPermanent means starting again cannot help (a kernel without a
	// mechanism the sandbox requires, say).
	Launch(cmd *exec.Cmd) (Launched, error)
}

// Launched is one process started by a Launcher.
type Launched interface {
	// Exited is called once, after the process has been reaped, with
	// cmd.Wait's error. It releases what the launch holds (relays, cgroups)
	// and returns the error that explains the exit when the launcher knows
	// more than the wait status (a sandbox limit that killed the server,
	// say), or nil. The Stdio transport wraps a non-nil result into the
	// ErrConnectionLost it reports, so errors.Is finds it.
	Exited(waitErr error) error
}
