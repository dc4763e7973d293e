package native

import (
	"errors"

	"github.com/toolhost/toolhost/sandbox"
)

// Mode is a server's sandbox mode (key sandbox of [servers.NAME], default
// from [host] sandbox).
type Mode string

const (
	// ModeOff runs the server unsandboxed, with the default containment
	// (transport.Containment). "" means the same.
	ModeOff Mode = "off"
	// ModeStrict runs the server sandboxed; a mechanism the kernel does not
	// offer is a start failure (ErrUnavailable), never a silent fallback.
	ModeStrict Mode = "strict"
	// ModeBestEffort runs the server with every mechanism the kernel
	// offers; what is missing is listed in Plan.Missing, which toolhost
	// check and status show.
	ModeBestEffort Mode = "best-effort"
)

// Defaults for a sandboxed server's limits.
const (
	// DefaultMemory is the memory limit of a sandboxed server whose Memory
	// is 0, in bytes: 1 GiB (a Node.js server's V8 heap and its launcher
	// fit).
	DefaultMemory int64 = 1 << 30
	// DefaultPids is the limit on the processes and threads of a
	// sandboxed server whose Pids is 0.
	DefaultPids = 256
	// ProxyAddr is the address, inside the server's network namespace, of
	// the HTTP and SOCKS5 proxy toolhost relays allowed egress through
	// (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY point at it).
	ProxyAddr = "127.0.0.1:3128"
)

// Errors. Each is distinct; the Stdio transport wraps them (ErrStart for
// start failures, ErrConnectionLost for exits), so errors.Is finds them.
var (
	// ErrSpec: the Spec is malformed (a relative path, a bad host entry, a
	// negative limit); the message names the key.
	ErrSpec = errors.New("invalid native sandbox")
	// ErrUnavailable: sandbox = "strict" needs a mechanism this kernel or
	// process does not offer (the message names it and what to do);
	// toolhost does not start the server unconfined.
	ErrUnavailable = errors.New("native sandbox mechanism unavailable")
	// ErrSetup: the sandbox could not be set up for this start (a mount or
	// a listener failed); the message names the step.
	ErrSetup = errors.New("native sandbox setup failed")
	// ErrMemoryLimit: the server was killed for exceeding its memory
	// limit; the message gives the limit. It wraps sandbox.ErrMemoryLimit,
	// the plugins' error for the same limit.
	ErrMemoryLimit = &limitError{"server memory limit exceeded", sandbox.ErrMemoryLimit}
	// ErrPidsLimit: the server reached its limit on processes and threads
	// and was stopped; the message gives the limit.
	ErrPidsLimit = errors.New("server process limit exceeded")
)

type limitError struct {
	msg  string
	also error
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.also }

// Spec is one stdio server's sandbox: the plugin grammar's capabilities
// plus a process limit, and the program it runs (for the runtime set).
type Spec struct {
	// Name names the server in errors and logs.
	Name string
	// Mode is ModeStrict or ModeBestEffort (ModeOff: no sandbox; Plan
	// returns an error).
	Mode Mode
	// Capabilities: Hosts (allowed_hosts), Mounts (allowed_paths; Quota is
	// not supported for native servers: ErrSpec), Memory (0:
	// DefaultMemory).
	sandbox.Capabilities
	// Pids limits the server's processes and threads together. 0:
	// DefaultPids.
	Pids int
	// Command is the server's program, an absolute path (resolved in
	// toolhost's PATH, symbolic links followed by Plan), and Env its
	// environment (KEY=VALUE): both decide the runtime set (see Plan).
	Command string
	Env     []string
	// Dir is the server's working directory; when it is not visible inside
	// the sandbox the server starts in "/".
	Dir string
}
