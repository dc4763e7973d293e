// Package nsinit is the first code of a sandboxed stdio server's process:
// toolhost re-executed (/proc/self/exe) with argv[0] Arg0 as PID 1 of new
// namespaces. Its init reads a Config from ConfigFD, sets the sandbox up
// and execve()s the server in the same process (see package native).
//
// It imports only the standard library (no networking or HTTP), x/sys and
// the Landlock and seccomp bindings, so that its init runs early and fast.
//
// The steps, in order (nsinit.go): check it is PID 1 of a new PID
// namespace; read the Config; make the mount tree private and build the
// new root (mount.go, after bubblewrap's setup_newroot); chdir to Dir (or
// /); set the network up (net.go); PR_SET_NO_NEW_PRIVS; enforce the
// Landlock ruleset (landlock.go); drop every capability (caps.go); install
// the seccomp filter (seccomp.go); set the rlimits (rlimit.go: last, as the
// Go runtime could not allocate under RLIMIT_AS); execve the server.
// A failure is reported on StatusFD with its stage.
package nsinit

// Arg0 is the argv[0] that marks the re-executed child.
const Arg0 = "toolhost-sandbox"

// The child's descriptors (the parent's cmd.ExtraFiles, in order).
const (
	// StatusFD: close-on-exec; EOF means the server's execve succeeded; on
	// failure the child writes "stage\x00errno\x00message" and exits 127.
	StatusFD = 3
	// ConfigFD: the parent writes the JSON Config and closes its end; the
	// child reads it to EOF before doing anything (the parent first puts
	// the child in its cgroups, so everything the child does is counted).
	ConfigFD = 4
	// ListenFD: a Unix socket on which the child sends the listening
	// sockets of Config.Listen (SCM_RIGHTS, one message, in order).
	ListenFD = 5
)

// Config is what the child does, in order.
type Config struct {
	// Path is the server's program as seen inside the new root; Argv its
	// argv (argv[0] included); Env its environment; Dir its working
	// directory inside the new root ("" or invisible: "/").
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	// Mounts build the new root, in order (parents before children).
	Mounts []Mount `json:"mounts"`
	// Files are small files written into the new root (/etc/hosts,
	// /etc/resolv.conf, /etc/passwd), read-only once the root is sealed.
	Files []File `json:"files"`

	// LoopbackUp brings the network namespace's lo up; Listen are TCP
	// addresses ("127.0.0.1:3128") the child binds and listens on there,
	// sent to the parent on ListenFD.
	LoopbackUp bool     `json:"loopback_up"`
	Listen     []string `json:"listen"`

	// Rlimits set before the execve (0: leave as inherited).
	RlimitAS    uint64 `json:"rlimit_as"`
	RlimitNPROC uint64 `json:"rlimit_nproc"`

	// Landlock, when set, restricts the server to these guest paths (the
	// second wall behind the mount namespace).
	Landlock *Landlock `json:"landlock,omitempty"`

	// Seccomp installs the seccomp filter (see seccomp.go).
	Seccomp bool `json:"seccomp"`
}

// Mount is one step of building the new root. Target is the guest path.
type Mount struct {
	// Kind is "bind" (Source, a host path), "tmpfs", "proc", "dev" (a
	// tmpfs with the device nodes null, zero, full, random, urandom, tty
	// bound from the host) or "symlink" (Target becomes a symbolic link to
	// Source).
	Kind     string `json:"kind"`
	Source   string `json:"source,omitempty"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"ro,omitempty"`
	// Size caps a tmpfs, in bytes (0: the kernel default).
	Size int64 `json:"size,omitempty"`
}

// File is a file written into the new root.
type File struct {
	Target  string `json:"target"`
	Content string `json:"content"`
}

// Landlock is the Landlock ruleset (kernel Documentation/userspace-api/
// landlock.rst): read and execute under ReadOnly, read and write under
// ReadWrite, no abstract Unix socket or signal beyond the sandbox (ABI
// 6+); TCP is the network namespace's to confine. BestEffort takes
// what the kernel's ABI offers.
type Landlock struct {
	ReadOnly   []string `json:"ro"`
	ReadWrite  []string `json:"rw"`
	BestEffort bool     `json:"best_effort"`
}
