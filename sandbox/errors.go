package sandbox

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/toolhost/toolhost/transport"
)

// MaxErrorText caps the text of an error message a guest sets with
// error_set for an operation other than call_tool (and call, v1):
// transport.MaxErrorText (4096 bytes), then "… (N bytes cut)". A call_tool
// error message becomes the call's error result and counts against
// max_output instead (larger: transport.ErrOutputTooLarge).
const MaxErrorText = transport.MaxErrorText

// Errors returned by sandbox, in addition to the transport sentinels
// (transport.ErrTimeout, transport.ErrOutputTooLarge, transport.ErrProtocol,
// transport.ErrClosed, transport.ErrNotConnected, transport.ErrStart,
// transport.ErrInitialize). Test with errors.Is; an error wraps at most one of
// the sentinels below, and where a transport sentinel fits it wraps that one
// too (noted per sentinel).
var (
	// ErrChecksum: the module file's SHA-256 does not match the configured
	// sha256 pin. Also wraps transport.ErrStart. Rebuild or re-download the
	// plugin, or update the pin if the new file is trusted.
	ErrChecksum = errors.New("plugin checksum mismatch")

	// ErrABI: the module's exports match no supported plugin ABI (hyper-mcp
	// "v2": list_tools + call_tool; mcp.run servlet "v1": describe + call), an
	// ABI export has the wrong signature (want () -> i32), or the module is
	// not valid WebAssembly. Also wraps transport.ErrInitialize. The message
	// names the exports found; see docs/PLUGIN-ABI.md.
	ErrABI = errors.New("unsupported plugin ABI")

	// ErrMemoryLimit: the module needs more linear memory than its cap. At
	// Connect (also wraps transport.ErrInitialize) the message says the
	// minimum the module needs to start; during a call it means the guest
	// ran out of memory (its instance is discarded). Raise memory in the
	// plugin's config (Manifest.Memory).
	// Wraps transport.ErrFault.
	ErrMemoryLimit error = &classed{"plugin memory limit exceeded", transport.ErrFault}

	// ErrTrap: the guest trapped (a Go panic, unreachable, an out-of-bounds
	// access, proc_exit with a non-zero code, a kernel call with an invalid
	// pointer). The message carries the guest's panic line when it printed
	// one on stderr. The instance is discarded; the plugin keeps serving.
	// Wraps transport.ErrFault.
	ErrTrap error = &classed{"plugin trapped", transport.ErrFault}

	// ErrInputTooLarge: the request is larger than the plugin's kernel memory
	// can hold (half of its memory cap). The Extism go-sdk silently drops
	// such an input (the guest would see an empty input), so sandbox refuses
	// it up front. Send less, or raise memory.
	ErrInputTooLarge = errors.New("request exceeds plugin input limit")

	// ErrHostDenied: the guest's http_request targeted a URL the plugin may
	// not reach: a host outside allowed_hosts (also after a redirect), a
	// scheme other than http/https, or an address in a refused range
	// (loopback, private, link-local, CGNAT, cloud metadata) that no
	// allowed_hosts entry names explicitly. The call fails and the instance
	// is discarded.
	ErrHostDenied = errors.New("plugin HTTP request denied")

	// ErrHostFunction: a host function called by the guest failed for a
	// reason other than policy: an HTTP request that could not be carried out
	// (connection refused, DNS failure, response larger than the HTTP limit),
	// malformed request JSON, a full variable store. The call fails and the
	// instance is discarded.
	ErrHostFunction = errors.New("plugin host function failed")

	// ErrOpenFiles: an instance tried to hold more files (and directories)
	// open in its mounts than max_open_files (default
	// DefaultMaxOpenFiles). The open fails in the guest (EIO), the call
	// fails with this error, and the instance is discarded, which closes
	// every file it held. Raise max_open_files if the tool legitimately
	// needs more.
	ErrOpenFiles = errors.New("plugin open-file limit exceeded")

	// ErrBusy: every instance of the plugin stayed busy until the caller's
	// deadline, so the call never started. Also wraps context.DeadlineExceeded. Not a
	// failure of the plugin: the host does not count it against the
	// plugin's circuit breakers. Raise instances, or the caller's deadline.
	// Wraps transport.ErrBusy.
	ErrBusy error = &classed{"no plugin instance free", transport.ErrBusy}

	// ErrHTTPLimit: one call issued more http_requests than
	// max_http_requests (default DefaultMaxHTTPRequests), or read more
	// response body bytes in all than max_http_bytes (default
	// DefaultMaxHTTPBytes). The request over the cap is not sent (or its
	// body not delivered); the call fails and the instance is discarded.
	ErrHTTPLimit = errors.New("plugin HTTP limit exceeded")

	// ErrQuota: a write would take the files under an rw mount beyond its
	// mount_quota. The write fails in the guest (EIO), the call fails with
	// this error and the instance is discarded; what was written before
	// stays. Remove files, or raise the quota.
	ErrQuota = errors.New("plugin mount quota exceeded")

	// ErrGuest: the plugin reported a failure of a non-tool operation
	// (error_set and a non-zero return from list_tools, read_resource, ...),
	// or returned a non-zero code without setting an error (any export). A
	// call_tool failure reported with error_set is not an error: it becomes a
	// CallToolResult with IsError set, per the Transport contract.
	ErrGuest = errors.New("plugin reported an error")
)

// classed is a sentinel of this package that is also one of transport's
// fault classes, so that the host tells faults apart without importing
// sandbox. Its text is its own.
type classed struct {
	msg   string
	class error
}

func (e *classed) Error() string { return e.msg }
func (e *classed) Unwrap() error { return e.class }

// permanent joins transport.ErrPermanent (with a *transport.PermanentError
// saying why) to a Connect error that restarting the plugin cannot cure:
// the module file is missing (transport.ErrStart with fs.ErrNotExist), does
// not match its sha256 pin (ErrChecksum), is not a plugin of a supported
// ABI (ErrABI), or needs more memory than its cap to start (ErrMemoryLimit
// with transport.ErrInitialize). Other errors are returned as they are.
func permanent(err error) error {
	why := ""
	switch {
	case errors.Is(err, transport.ErrStart) && errors.Is(err, fs.ErrNotExist):
		why = "the module file does not exist"
	case errors.Is(err, ErrManifest):
		why = "its manifest is invalid"
	case errors.Is(err, ErrChecksum):
		why = "the module file does not match its sha256 pin"
	case errors.Is(err, ErrABI):
		why = "the module is not a plugin of a supported ABI"
	case errors.Is(err, ErrMemoryLimit) && errors.Is(err, transport.ErrInitialize):
		why = "its memory cap is below what the module needs to start"
	default:
		return err
	}
	return &transport.PermanentError{Reason: why, Err: err}
}

// panicLine extracts the guest's panic or fatal-error line from the tail of
// its stderr, or "".
func panicLine(tail []string) string {
	for _, l := range tail {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return l
		}
	}
	return ""
}

func outOfMemory(tail []string) bool {
	for _, l := range tail {
		if strings.Contains(l, "out of memory") {
			return true
		}
	}
	return false
}
