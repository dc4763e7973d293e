package sandbox

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"
)

// Manifest is the sandbox's own input for one plugin: the module, what it
// may reach (Capabilities) and the limits of its instances. The sandbox
// reads nothing else; the host maps a [plugins.NAME] table to a Manifest
// in one place (host's manifestOf), and toolhost inspect and prewarm use
// the same mapping.
//
// Sizes are bytes, durations time.Duration. A zero field means the default
// named on it, the zero Manifest (with Name and Path set) is a plugin with
// no capability and every default limit. Engine.Plugin copies the Manifest
// (its slices and map are not copied deeply: do not change them while the
// Plugin is in use); Connect checks it with Validate.
type Manifest struct {
	// Name names the plugin in errors, logs and serverInfo.name. It does
	// not affect the module's behaviour.
	Name string

	// Path is the .wasm module file (absolute, or relative to the process's
	// working directory).
	Path string

	// SHA256 pins the module's digest: 64 hex digits, case and surrounding
	// space ignored. Empty: not pinned. Connect fails with ErrChecksum when
	// the file's SHA-256 differs.
	SHA256 string

	// Capabilities are what the guest may reach: hosts, directories,
	// memory.
	Capabilities

	// Config is key/value configuration the guest reads with config_get,
	// visible to this plugin only. Nil: none.
	Config map[string]string

	// Instances is the size of the instance pool, the most calls that run
	// at once. 0: DefaultInstances().
	Instances int

	// Isolation is IsolationPooled (the default, ""): instances are reused
	// and the guest's globals persist between calls; or IsolationFresh: a
	// new instance for every call.
	Isolation Isolation

	// MaxOutput caps one result (the guest's output_set, or an error it
	// sets), in bytes. 0: DefaultMaxOutput. A larger result is an error
	// wrapping transport.ErrOutputTooLarge, never truncated.
	MaxOutput int64

	// MaxOpenFiles caps the files (and directories) one instance may hold
	// open in its mounts at once. 0: DefaultMaxOpenFiles.
	MaxOpenFiles int

	// MaxHTTPRequests caps the http_request calls of one plugin call. 0:
	// DefaultMaxHTTPRequests.
	MaxHTTPRequests int

	// MaxHTTPBytes caps the response bodies all http_request calls of one
	// plugin call read, in bytes. 0: DefaultMaxHTTPBytes.
	MaxHTTPBytes int64

	// Timeout is the deadline of one call whose context has none (the host
	// always gives one, so it applies to other callers: toolhost inspect,
	// tests, embedders), counted from when the call gets an instance; it
	// also bounds the first instance's warm-up at Connect (with at least
	// DefaultStartTimeout) when Connect's context has no deadline. 0:
	// DefaultTimeout.
	Timeout time.Duration
}

// Capabilities are what a sandboxed backend may reach beyond its own
// computation: the network hosts, the host directories, and the memory it
// may use. They are the one capability grammar of toolhost's sandboxes:
// the Wasm engine enforces them on plugins, and the same types are meant
// for a native sandbox of child processes, where Memory caps the address
// space or cgroup and a process count would join them. The zero value
// grants nothing and the default memory.
type Capabilities struct {
	// Hosts are the host-name globs the backend may reach over HTTP
	// ("example.com", "*.wikipedia.org"), optionally limited to one port
	// ("example.com:8443", "[::1]:8080"); key allowed_hosts. Empty: no
	// network. Loopback, private and metadata addresses are refused unless
	// an entry names that host or IP literally (see docs/PLUGIN-ABI.md).
	// A malformed entry fails Connect (transport.ErrStart).
	Hosts []string

	// Mounts are the host directories the backend sees, each at its guest
	// path (key allowed_paths). Empty: no file system. A mount whose Host is
	// not an existing directory fails Connect (transport.ErrStart).
	Mounts []Mount

	// Memory caps the backend's memory, in bytes. 0: DefaultMemory. A Wasm
	// plugin's cap is on its linear memory, rounded up to whole WebAssembly
	// pages (PageSize) and at most 4 GiB (65536 pages); the same cap applies
	// to each instance's Extism kernel memory.
	Memory int64
}

// Mount maps a host directory into the guest (one allowed_paths entry).
type Mount struct {
	// Host is the host directory, absolute; symbolic links in it are
	// resolved at Connect.
	Host string
	// Guest is the absolute path the guest sees it at.
	Guest string
	// Mode is MountReadOnly (the zero value) or MountReadWrite.
	Mode MountMode
	// Quota caps the bytes of the files under a read-write mount (the
	// files already there count); 0: none. Writes beyond it fail with
	// ENOSPC in the guest.
	Quota int64
}

// MountMode says whether the guest may change a mount's files.
type MountMode uint8

const (
	// MountReadOnly: the guest may read and list ("ro:" in allowed_paths,
	// and the default).
	MountReadOnly MountMode = iota
	// MountReadWrite: the guest may also create, write and remove ("rw:").
	MountReadWrite
)

// String returns "ro" or "rw", the allowed_paths prefixes.
func (m MountMode) String() string {
	switch m {
	case MountReadOnly:
		return "ro"
	case MountReadWrite:
		return "rw"
	}
	return fmt.Sprintf("MountMode(%d)", uint8(m))
}

// Isolation is how a plugin's instances are shared between calls.
type Isolation string

const (
	// IsolationPooled reuses instances: a guest's globals persist between
	// calls on the same instance. "" means the same.
	IsolationPooled Isolation = "pooled"
	// IsolationFresh gives every call a new instance.
	IsolationFresh Isolation = "fresh"
)

// pages is m's memory cap in WebAssembly pages: Memory (default
// DefaultMemory) rounded up to whole pages, at most 65536 (4 GiB).
func (m *Manifest) pages() uint32 {
	mem := m.Memory
	if mem <= 0 {
		mem = DefaultMemory
	}
	return uint32(min((mem+PageSize-1)/PageSize, 65536))
}

// ErrManifest: a Manifest field is out of its documented range (a negative
// limit, an unknown Isolation or MountMode, a relative mount path, a quota
// on a read-only mount). Connect wraps it with transport.ErrStart and
// transport.ErrPermanent; the message names the field. A Manifest made
// from a validated [plugins.NAME] table never has one.
var ErrManifest = errors.New("invalid plugin manifest")

// Validate reports the first field of m out of range, wrapping
// ErrManifest. It does not read the file system: a missing module or mount
// directory is found by Connect.
func (m *Manifest) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrManifest)
	}
	switch {
	case m.Path == "":
		return bad("Path is empty")
	case m.Memory < 0:
		return bad("Memory is %d bytes, below 0", m.Memory)
	case m.Instances < 0:
		return bad("Instances is %d, below 0", m.Instances)
	case m.MaxOutput < 0:
		return bad("MaxOutput is %d bytes, below 0", m.MaxOutput)
	case m.MaxOpenFiles < 0:
		return bad("MaxOpenFiles is %d, below 0", m.MaxOpenFiles)
	case m.MaxHTTPRequests < 0:
		return bad("MaxHTTPRequests is %d, below 0", m.MaxHTTPRequests)
	case m.MaxHTTPBytes < 0:
		return bad("MaxHTTPBytes is %d bytes, below 0", m.MaxHTTPBytes)
	case m.Timeout < 0:
		return bad("Timeout is %v, below 0", m.Timeout)
	}
	switch m.Isolation {
	case "", IsolationPooled, IsolationFresh:
	default:
		return bad("Isolation is %q: want %q or %q", m.Isolation, IsolationPooled, IsolationFresh)
	}
	for _, mt := range m.Mounts {
		switch {
		case !filepath.IsAbs(mt.Host):
			return bad("mount %q: Host %q is not an absolute path", mt.Guest, mt.Host)
		case !path.IsAbs(mt.Guest):
			return bad("mount %q: Guest is not an absolute path", mt.Guest)
		case mt.Mode != MountReadOnly && mt.Mode != MountReadWrite:
			return bad("mount %q: Mode is %v", mt.Guest, mt.Mode)
		case mt.Quota < 0:
			return bad("mount %q: Quota is %d bytes, below 0", mt.Guest, mt.Quota)
		case mt.Quota > 0 && mt.Mode != MountReadWrite:
			return bad("mount %q: Quota is set on a read-only mount", mt.Guest)
		}
	}
	return nil
}
