package host

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds: the machine-readable class of a failed call, the same
// everywhere a client reads one: the "kind" of a REST error body
// ({"error":{"kind":KIND,...}}), the _meta of an isError result the host
// or the gateway made ({"io.toolhost/error": KIND}, MetaErrorKind), and the
// HTTP status of the REST API (HTTPStatus). ErrorKind finds the kind of an
// error by errors.Is, never by its text:
//
//	kind                 status  errors
//	bad_request          400     (the REST API's own: a body or query it cannot read)
//	invalid_arguments    400     ErrInvalidArguments; arguments that do not match the inputSchema (an isError result)
//	denied               403     ErrToolNotAllowed, ErrPromptNotAllowed, ErrResourceNotAllowed, ErrUnknownProfile
//	unknown_tool         404     ErrUnknownTool
//	disabled             409     ErrToolDisabled (Host.DisableTool), ErrBackendDisabled (Host.Disable, enabled = false)
//	grant_required       403     ErrGrantRequired: the tool needs a grant (or an approval) the caller does not have
//	rate_limited         429     ErrRateLimited: a rate limit, or a gateway client at its max_concurrent
//	tool_changed         409     ErrToolChanged: the tool's definition changed since it was approved (quarantined)
//	idempotency_conflict 409     ErrIdempotencyConflict: an idempotency key reused with other arguments
//	store_unavailable    503     ErrStoreUnavailable: the store could not answer what the call depends on
//	canceled             499     context.Canceled: the caller went away (nginx's "client closed request")
//	tool_error           500     the tool ran and returned isError (a result, not an error)
//	backend_error        502     any other failure of the backend: ErrConnectionLost, ErrInvalidOutput, ErrOutputTooLarge, a protocol error
//	backend_unavailable  503     ErrBackendUnavailable, ErrRequiredBackend, ErrBackendRemoved
//	circuit_open         503     ErrCircuitOpen
//	closed               503     ErrClosed
//	timeout              504     ErrTimeout, context.DeadlineExceeded
//
// backend_error is 502 Bad Gateway (RFC 9110, section 15.6.3: the gateway
// got an invalid response from the server it called); a tool that failed
// on its own account (tool_error) is 500.
const (
	KindBadRequest          = "bad_request"
	KindInvalidArguments    = "invalid_arguments"
	KindDenied              = "denied"
	KindUnknownTool         = "unknown_tool"
	KindDisabled            = "disabled"
	KindRateLimited         = "rate_limited"
	KindGrantRequired       = "grant_required"
	KindToolChanged         = "tool_changed"
	KindIdempotencyConflict = "idempotency_conflict"
	KindStoreUnavailable    = "store_unavailable"
	KindCanceled            = "canceled"
	KindToolError           = "tool_error"
	KindBackendError        = "backend_error"
	KindBackendUnavailable  = "backend_unavailable"
	KindCircuitOpen         = "circuit_open"
	KindClosed              = "closed"
	KindTimeout             = "timeout"
)

// MetaErrorKind is the _meta key (MCP 2025-11-25 basic, "_meta": a
// reverse-DNS prefix of our own) under which an isError CallToolResult that
// the host or the gateway made, rather than the tool, carries its error
// kind: {"_meta": {"io.toolhost/error": "invalid_arguments"}}. A tool's own
// isError result has no such key (its kind is tool_error).
const MetaErrorKind = "io.toolhost/error"

// StatusClientClosedRequest is the status of KindCanceled: 499, nginx's
// "client closed request" (no RFC status says it).
const StatusClientClosedRequest = 499

// ErrorKind returns the kind of err (see the table above), "" for nil.
// An error that is none of the host's is backend_error.
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidArguments):
		return KindInvalidArguments
	case errors.Is(err, ErrUnknownTool):
		return KindUnknownTool
	case errors.Is(err, ErrToolNotAllowed), errors.Is(err, ErrPromptNotAllowed),
		errors.Is(err, ErrResourceNotAllowed), errors.Is(err, ErrUnknownProfile):
		return KindDenied
	case errors.Is(err, ErrGrantRequired):
		return KindGrantRequired
	case errors.Is(err, ErrRateLimited):
		return KindRateLimited
	case errors.Is(err, ErrToolChanged):
		return KindToolChanged
	case errors.Is(err, ErrIdempotencyConflict):
		return KindIdempotencyConflict
	case errors.Is(err, ErrStoreUnavailable):
		return KindStoreUnavailable
	// Before unavailable: a disabled backend's calls wrap both.
	case errors.Is(err, ErrToolDisabled), errors.Is(err, ErrBackendDisabled):
		return KindDisabled
	case errors.Is(err, ErrCircuitOpen):
		return KindCircuitOpen
	case errors.Is(err, ErrClosed):
		return KindClosed
	// Before unavailable: a call that waited for a backend until its
	// deadline wraps both.
	case errors.Is(err, ErrTimeout):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCanceled
	// Before a bare DeadlineExceeded: a backend whose last start timed
	// out is unavailable, not this call's timeout.
	case errors.Is(err, ErrBackendUnavailable), errors.Is(err, ErrRequiredBackend), errors.Is(err, ErrBackendRemoved):
		return KindBackendUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindBackendError
}

// HTTPStatus returns the HTTP status of an error kind (see the table
// above); 500 for a kind it does not know.
func HTTPStatus(kind string) int {
	switch kind {
	case KindBadRequest, KindInvalidArguments:
		return http.StatusBadRequest
	case KindDenied, KindGrantRequired:
		return http.StatusForbidden
	case KindUnknownTool:
		return http.StatusNotFound
	case KindDisabled, KindToolChanged, KindIdempotencyConflict:
		return http.StatusConflict
	case KindRateLimited:
		return http.StatusTooManyRequests
	case KindCanceled:
		return StatusClientClosedRequest
	case KindBackendError:
		return http.StatusBadGateway
	case KindBackendUnavailable, KindCircuitOpen, KindClosed, KindStoreUnavailable:
		return http.StatusServiceUnavailable
	case KindTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// ResultKind returns the error kind of a call's result: the kind in its
// _meta (MetaErrorKind) when the host or gateway made it, tool_error for
// another isError result, "" for a success or nil.
func ResultKind(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError {
		return ""
	}
	if k, ok := res.Meta[MetaErrorKind].(string); ok && k != "" {
		return k
	}
	return KindToolError
}

// ErrorResult returns an isError result whose text is err's and whose
// _meta carries ErrorKind(err) (and, for a rate limit's refusal, the
// seconds to wait under MetaRetryAfter): how the gateway answers a tools/call that
// could not be made (MCP 2025-11-25 server/tools, "Error Handling": a tool
// execution error for the model to read).
func ErrorResult(err error) *mcp.CallToolResult {
	res := KindResult(ErrorKind(err), err.Error())
	addRetryAfter(res, err) // a rate limit's refusal: MetaRetryAfter (ratelimit.go)
	return res
}

// KindResult returns an isError result with text and kind in its _meta.
func KindResult(kind, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}},
		Meta: mcp.Meta{MetaErrorKind: kind}}
}
