// Package transport defines the operation-level contract between the host and
// a tool backend, and implements it for external MCP servers reached as an MCP
// client over stdio (a child process) and over Streamable HTTP.
//
// A Transport speaks in MCP operations (list tools, call a tool, read a
// resource, ...), not in JSON-RPC messages: an MCP server and an in-process
// WebAssembly plugin (package sandbox) each implement it directly, so the host
// never asks which kind of backend it talks to. Request and result shapes are
// the go-sdk's protocol types (package mcp), whose JSON encodings are those of
// the MCP specification, revision 2025-11-25 and later.
package transport

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is one connection to one tool backend.
//
// Lifecycle: a Transport is created unconnected by its constructor; the host
// calls Connect once, then any number of the operation methods, then Close.
// A Transport is not reconnected after Close: to restart a backend the host
// builds a new one.
//
// Concurrency: after Connect has returned successfully, every operation method
// may be called from many goroutines at once; implementations multiplex or
// pool as they need. Connect is not called concurrently with anything else.
// Close may be called from any goroutine, at any time (also during Connect or
// during calls, which then fail with [ErrClosed] or the backend's error), and
// more than once: calls after the first return nil. Close blocks until every
// goroutine and child process the Transport started is gone.
//
// Contexts: ctx bounds the operation. When ctx is done before the backend
// answers, the method returns promptly with an error wrapping ctx.Err() (for a
// deadline, also [ErrTimeout]); for MCP servers the server is sent
// notifications/cancelled (MCP 2025-11-25, basic/utilities/cancellation) and a
// late response is dropped. The connection stays usable after a cancelled
// call.
//
// Errors: a tool that ran and failed is not an error of the Transport; it is a
// *mcp.CallToolResult with IsError set (MCP 2025-11-25, server/tools, "Error
// Handling"). Errors returned by the methods mean the operation could not be
// carried out, and wrap one of the sentinels below where one applies.
type Transport interface {
	// Connect starts or dials the backend and performs the MCP initialize
	// handshake (for a plugin: loads and checks the module). It reports the
	// backend's identity and capabilities. Connect on a closed Transport
	// returns ErrClosed.
	Connect(ctx context.Context) (*mcp.InitializeResult, error)

	// ListTools returns every tool the backend offers, following pagination
	// cursors to the end.
	ListTools(ctx context.Context) ([]*mcp.Tool, error)

	// CallTool calls the backend's tool params.Name (the backend's own name,
	// not the host's namespaced one) with params.Arguments.
	CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)

	// ListResources returns every resource, following pagination cursors. It
	// returns ErrUnsupported when the backend did not declare the resources
	// capability.
	ListResources(ctx context.Context) ([]*mcp.Resource, error)

	// ReadResource reads one resource by URI. ErrUnsupported as ListResources.
	ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)

	// ListPrompts returns every prompt, following pagination cursors. It
	// returns ErrUnsupported when the backend did not declare the prompts
	// capability.
	ListPrompts(ctx context.Context) ([]*mcp.Prompt, error)

	// GetPrompt renders one prompt. ErrUnsupported as ListPrompts.
	GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error)

	// Ping checks that the backend answers (MCP 2025-11-25,
	// basic/utilities/ping; for a plugin: that it is loaded and can run a
	// call). On an MCP session of protocol ProtocolNoPing or later, where
	// ping no longer exists, it lists the first page of tools instead. The
	// host's health checks use it.
	Ping(ctx context.Context) error

	// Close ends the connection and releases everything the Transport holds.
	// It is idempotent and safe to call from any goroutine.
	Close() error
}

// Errors returned by Transport implementations. Each error a Transport returns
// wraps at most one of these, so callers can tell faults apart with errors.Is.
var (
	// ErrClosed: the Transport was closed by its owner.
	ErrClosed = errors.New("transport closed")

	// ErrNotConnected: an operation was called before Connect succeeded.
	ErrNotConnected = errors.New("transport not connected")

	// ErrStart: the backend could not be started or reached at all (the
	// command does not exist or is not executable, the URL refuses
	// connections, the module file is missing). Check the configuration.
	ErrStart = errors.New("backend could not be started")

	// ErrInitialize: the backend started but the MCP initialize handshake
	// failed (it exited, answered with an error, or spoke another protocol).
	ErrInitialize = errors.New("backend failed to initialize")

	// ErrConnectionLost: the backend went away after a successful Connect (the
	// process exited or was killed, stdout was closed, the HTTP session could
	// not be re-established). The host may restart it.
	ErrConnectionLost = errors.New("backend connection lost")

	// ErrProtocol: the backend sent something that is not valid MCP (for
	// stdio, a line on stdout that is not a JSON-RPC message).
	ErrProtocol = errors.New("backend protocol violation")

	// ErrTimeout: the operation's deadline passed before the backend
	// answered. The error also wraps context.DeadlineExceeded.
	ErrTimeout = errors.New("backend call timed out")

	// ErrUnsupported: the backend did not declare the capability the
	// operation needs (MCP 2025-11-25, basic/lifecycle, "Capability
	// Negotiation").
	ErrUnsupported = errors.New("capability not supported by backend")

	// ErrOutputTooLarge: the backend's result exceeded the configured
	// max_output. The result is dropped, never truncated.
	ErrOutputTooLarge = errors.New("backend result exceeds max_output")

	// ErrFault: the backend faulted while serving the operation (a Wasm
	// plugin trapped, or ran out of its memory cap) but keeps serving
	// others. The host counts consecutive faults: health_threshold of them
	// take the backend down for a restart.
	ErrFault = errors.New("backend faulted")

	// ErrBusy: the backend had no capacity free (every instance of a Wasm
	// plugin stayed busy) until the operation's deadline, so the request was
	// never started; the error also wraps context.DeadlineExceeded. Not a
	// failure of the backend: the host does not count it against its
	// circuit breakers. Raise the backend's capacity or the deadline.
	ErrBusy = errors.New("backend busy")

	// ErrPermanent is joined to a Connect error (with a *PermanentError,
	// which says why) when restarting the backend cannot cure it while its
	// files and configuration stay as they are: a missing module file, a
	// checksum pin mismatch, an unsupported plugin ABI. The host then marks
	// the backend failed at once instead of restarting it with backoff.
	ErrPermanent = errors.New("backend cannot start as configured")

	// ErrNotSent is joined to an error when the request certainly never
	// reached the backend (the transport was not connected or already
	// closed, or the HTTP connection was refused), so sending it again
	// cannot run a tool twice. The host retries such calls.
	ErrNotSent = errors.New("request not sent")
)

// PermanentError is a Connect error that restarting cannot cure (see
// ErrPermanent): Reason says why in a few words for a log and
// BackendStatus.LastError ("the module file does not match its sha256
// pin"); Err is the error itself. errors.Is finds ErrPermanent and
// everything Err wraps.
type PermanentError struct {
	Reason string
	Err    error
}

func (e *PermanentError) Error() string   { return e.Err.Error() }
func (e *PermanentError) Unwrap() []error { return []error{ErrPermanent, e.Err} }

// ListKind names a list a server said changed (MCP 2025-11-25,
// notifications/tools/list_changed and its resources and prompts
// counterparts).
type ListKind string

// The lists a server can announce changes of.
const (
	ListTools     ListKind = "tools"
	ListResources ListKind = "resources"
	ListPrompts   ListKind = "prompts"
)

// Watcher is implemented by transports that notice a lost backend without
// an operation in flight (a stdio server's process exits or closes its
// stdout). Done's channel is closed once the connection made by Connect has
// ended for any reason, Close included; it is nil before Connect.
type Watcher interface {
	Done() <-chan struct{}
	// Lost explains why the connection ended, once Done is closed (it
	// wraps ErrConnectionLost, ErrProtocol or ErrClosed).
	Lost() error
}
