package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pipeline. Every operation that reaches a backend (tools/call,
// prompts/list, prompts/get, resources/list, resources/read,
// resources/templates/list, completion/complete) runs through a chain of
// ordered layers, in the spirit of go-sdk's mcp.Middleware: a layer takes
// the handler below it and returns one that does its job around it. There
// are three compositions of the same concerns, one per kind of operation,
// so that no layer asks which kind it has: a tool call (call); an
// operation on one prompt or resource (item: prompts/get, resources/read,
// completion/complete); a listing of one backend's prompts, resources or
// templates (list). From the caller down:
//
//	layer      file               call item list  its job
//	trace      layer_trace.go      x    x         the op's OpenTelemetry span (when tracing is on), the parent of what runs below
//	audit      layer_audit.go      x    x         the record of the attempt (refusals by the layers below too), written when it ends
//	resolve    layer_resolve.go    x    x         catalogue name (or URI) → backend; waits for a backend coming up; unknown names refused
//	pin        layer_pin.go        x              a quarantined tool (its definition changed since approved) refused
//	policy     layer_policy.go     x    x    x    [policy], the profile, its requires; a list filtered on the way back
//	grant      layer_grant.go      x              a tool that needs a grant: the caller's live grant, or an approval asked for
//	rate       layer_rate.go       x              the caller's, profile's and tool's rate limits
//	validate   layer_validate.go   x              arguments against inputSchema; on the way back max_output and outputSchema
//	idempotency layer_idempotency.go x            a call made again with its idempotency key gets the first one's result
//	fallback   layer_fallback.go   x              a failed call's [tools.NAME] fallback, through the whole pipeline again
//	breaker    layer_breaker.go    x              the backend's and the tool's circuit breakers
//	deadline   layer_deadline.go   x    x    x    the one deadline of the attempt (the backend's timeout from the call's start), set by the host
//	retry      layer_retry.go      x    x    x    sends a request again that never left (or a retry = true tool's failure)
//	transport  layer_transport.go  x    x    x    waits for the backend to be ready, sends, reports faults to its supervisor
//
// Prompts and resources skip validate, fallback and breaker because those
// concerns are a tool's (a missing prompt or URI is the caller's mistake,
// not the backend failing); a list is not audited and goes to the backend
// its caller names. docs/RATIONALE.md ("Why are the pipeline's layers in
// this order?") says why this order. A new concern is one new layer in
// these lists.
//
// What a layer sees: the op's request (op.req), read-only; its
// destination (op.dst), written by resolve and read by the layers below
// it; its outcome (op.out), where each layer writes its own fields, the
// ones it found out, and the layers above read them on the way back. A
// layer returns the result of the op (see handler) and an error in its own
// words: the caller names the error once (op.named). This is the shape an
// embedder's layer would have once exported (DESIGN decision 13): a
// func(next Handler) Handler, with Handler func(ctx, *Op) (any, error),
// placed in a composition by name; it would read the request and
// destination through accessors, keep its own state in its closure, and
// see the outcome fields of the layers below it read-only.

// MCP methods an op can carry.
const (
	methodCallTool      = "tools/call"
	methodListPrompts   = "prompts/list"
	methodGetPrompt     = "prompts/get"
	methodListResources = "resources/list"
	methodReadResource  = "resources/read"
	methodListTemplates = "resources/templates/list"
	methodComplete      = "completion/complete"
)

// op is one operation on its way through the pipeline: what the caller
// asked (req), where it goes (dst) and what the layers found out (out).
type op struct {
	req request
	dst destination
	out outcome
	// argsBuf holds req.args of a tools/call made by CallTool, so that the
	// pool reuses it with the op.
	argsBuf args
}

// request is what the caller asked. The caller sets it before the op
// enters the pipeline; no layer writes it.
type request struct {
	method  string
	profile string // the view's profile; "" for the Host's own
	// name is the catalogue name of a tool or prompt, or a resource's URI
	// (of a completion: its ref's prompt or URI).
	name string
	// backend is the backend a resources/read names, or the one a list is
	// taken from.
	backend string
	// args are a tools/call's arguments, parsed once for every layer that
	// needs them (args.go); a fallback shares its tool's.
	args        *args
	promptArgs  map[string]string   // prompts/get
	complete    *mcp.CompleteParams // completion/complete
	fallbackFor string              // tools/call: the tool this call is the fallback of
	// start is when a tools/call's one deadline began (see deadlineLayer):
	// when CallTool was called (or the earlier start WithCallStart gave),
	// or when its fallback was. Zero for other ops: their deadline starts
	// in the deadline layer.
	start time.Time
	// view is the caller's view when a tools/call was made (the caller
	// refuses a call on a closed Host or in a removed profile's view).
	view *view
}

// subject is what an item op is about: itemPrompt (prompts/get, a
// completion of a prompt), itemResource (resources/read, a completion of a
// resource or template), or "" (a completion without a valid ref).
func (r *request) subject() string {
	switch {
	case r.method == methodGetPrompt:
		return itemPrompt
	case r.method == methodReadResource:
		return itemResource
	case r.complete == nil || r.complete.Ref == nil:
		return ""
	case r.complete.Ref.Type == refPrompt:
		return itemPrompt
	case r.complete.Ref.Type == refResource:
		return itemResource
	}
	return ""
}

// What an item op is about (request.subject).
const (
	itemPrompt   = "prompt"
	itemResource = "resource"
)

// listOp is the op of a list (prompts/list, resources/list,
// resources/templates/list) of backend b in the view of profile: the
// caller names the backend, so it sets the destination (the list pipeline
// has no resolve layer).
func listOp(method, profile string, b *backend) *op {
	return &op{req: request{method: method, profile: profile, backend: b.name}, dst: destination{b: b, backend: b.name}}
}

// destination is where an op goes. The resolve layer sets it; the caller
// of a list (or of h.pipe.send), which has no resolve layer, sets it to
// the backend it asks.
type destination struct {
	b       *backend
	backend string // b's name; for a tools/call refused as unavailable, the backend waited for
	entry   entry  // tools/call: the catalogue entry
	target  string // the operation's own name on the backend (tool, prompt)
	view    *view  // tools/call: the view the call is decided in (request.view, or the one after a wait)
}

// outcome is what the layers found out. Each field is written by the one
// layer named in its comment, and read by the layers above it (and by the
// caller) once the layer below has returned.
type outcome struct {
	// policy: its decision, once it made one (decided).
	decided  bool
	decision Decision
	// validate: the message of arguments that do not match the tool's
	// inputSchema (the call was answered with a tool error), and whether
	// the arguments were refused as not a JSON object.
	invalid     string
	argsRefused bool
	// fallback: the tool the call fell back to ("" for none) and the
	// error that made it.
	fallback   string
	primaryErr error
	// retry: the retries made.
	retries int
	// transport: the last attempt could not get a connection (not
	// retried); the size of a tools/call's result's JSON text when it
	// succeeded (see callSized).
	noRetry bool
	size    int
	// audit: the op's record (kept in the op so that the pool reuses it).
	record AuditRecord
}

// named returns err, the error the op's run ended with, as its caller
// returns it: named once, here, in the op's terms (the audit record says
// it in the same words). A tools/call's errors are named by its catalogue
// name ("TOOL: ..."), except those that name what they refuse
// (*UnknownToolError, *ToolNotAllowedError), a removed profile's, and a
// fallback's (named by the fallback's own call). A prompt's and a
// resource's errors from below the policy layer are named "prompt NAME:
// ..." and "resource URI of BACKEND: ..."; the refusals of resolve and
// policy name what they refuse themselves; a completion's errors say
// "completion/complete" where resolve or the transport made them. An
// ErrRequiredBackend is named by the op's name.
func (o *op) named(err error) error {
	if err == nil || o.out.fallback != "" {
		return err
	}
	return o.nameError(err)
}

// nameError is named without its exception for a fallback's error (the
// audit record of the tool that fell back names the tool's own error).
func (o *op) nameError(err error) error {
	switch err.(type) {
	case *UnknownToolError, *ToolNotAllowedError, *NotAllowedError:
		return err
	case *GrantRequiredError: // grants: it names the tool itself
		return err
	}
	if errors.Is(err, ErrRequiredBackend) || o.req.method == methodCallTool && !errors.Is(err, ErrUnknownProfile) {
		return fmt.Errorf("%s: %w", o.req.name, err)
	}
	if !o.out.decision.Allowed {
		// Refused by resolve, which says what it did not find.
		return err
	}
	switch o.req.method {
	case methodGetPrompt:
		return fmt.Errorf("prompt %q: %w", o.req.name, err)
	case methodReadResource:
		return fmt.Errorf("resource %q of %s: %w", o.req.name, o.req.backend, err)
	}
	return err
}

// handler runs an op through the rest of the pipeline and returns its
// result: a *mcp.CallToolResult, *mcp.GetPromptResult,
// *mcp.ReadResourceResult, []*mcp.Prompt, []*mcp.Resource,
// []*mcp.ResourceTemplate or *mcp.CompleteResult by method.
type handler func(ctx context.Context, o *op) (any, error)

// layer is one concern of the pipeline: it returns a handler that does its
// job around next.
type layer func(h *Host, next handler) handler

// The compositions, from the caller down to the transport layer (see the
// table above): upper runs on the catalogue's account, lower on one
// backend's.
var (
	callUpper = []layer{traceLayer, auditCallLayer, resolveCallLayer, pinLayer, policyCallLayer, grantLayer, rateLayer, validateLayer, idempotencyLayer, fallbackLayer}
	callLower = []layer{breakerLayer, deadlineLayer, retryLayer}
	itemUpper = []layer{traceLayer, auditItemLayer, resolveItemLayer, policyItemLayer}
	listUpper = []layer{policyListLayer}
	lower     = []layer{deadlineLayer, retryLayer}
)

// pipelines are a Host's compositions of the layers.
type pipelines struct {
	call handler // tools/call
	item handler // prompts/get, resources/read, completion/complete
	list handler // prompts/list, resources/list, resources/templates/list
	// send is the lower part (deadline, retry, transport), which resolve
	// uses to ask a backend on its own account (it lists prompts), with the
	// backend in the op's destination.
	send handler
}

// buildPipeline composes h's pipelines.
func (h *Host) buildPipeline() {
	h.pipe.send = compose(h, lower, h.transportLayer)
	h.pipe.call = compose(h, callUpper, compose(h, callLower, h.transportCallLayer))
	h.pipe.item = compose(h, itemUpper, h.pipe.send)
	h.pipe.list = compose(h, listUpper, h.pipe.send)
}

func compose(h *Host, ls []layer, next handler) handler {
	for i := len(ls) - 1; i >= 0; i-- {
		next = ls[i](h, next)
	}
	return next
}

// opPool recycles the ops of tool calls, with their arguments and audit
// records, between calls: an op belongs to one run of the pipeline, and
// nothing keeps it (or a pointer into it) once that run has returned.
var opPool = sync.Pool{New: func() any { return new(op) }}

// newOp returns a zero op from the pool; freeOp gives it back.
func newOp() *op { return opPool.Get().(*op) }

// freeOp gives o back to the pool, zeroed.
func freeOp(o *op) {
	*o = op{}
	opPool.Put(o)
}
