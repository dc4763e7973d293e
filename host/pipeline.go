package host

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pipeline. Every operation that reaches a backend (tools/call,
// prompts/list, prompts/get, resources/list, resources/read,
// resources/templates/list, completion/complete) runs through one chain of
// ordered layers, in the spirit of go-sdk's mcp.Middleware: a layer takes
// the handler below it and returns one that does its job around it. From the
// caller down:
//
//	audit      layer_audit.go     the record of the attempt (refusals by the layers below too), written when it ends
//	resolve    layer_resolve.go   catalogue name (or URI) → backend; starts the call's clock; waits for a backend coming up; unknown names refused
//	policy     layer_policy.go    [policy], the profile, its requires; lists filtered on the way back
//	validate   layer_validate.go  arguments against inputSchema; on the way back max_output and outputSchema
//	fallback   layer_fallback.go  a failed call's [tools.NAME] fallback, through the whole pipeline again
//	breaker    layer_breaker.go   the backend's and the tool's circuit breakers
//	deadline   layer_deadline.go  the one deadline of the attempt (the backend's timeout from the call's start), set by the host
//	retry      layer_retry.go     sends a request again that never left (or a retry = true tool's failure)
//	transport  layer_transport.go waits for the backend to be ready, sends, reports faults to its supervisor
//
// docs/RATIONALE.md ("Why are the pipeline's layers in this order?") says
// why this order. A new concern is one new layer in this list.

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
// asked (method, profile, name, ...) and what the layers found out on the
// way (the backend, the audit record, the arguments' JSON text, ...).
type op struct {
	method  string
	profile string // the view's profile; "" for the Host's own
	// name is the catalogue name of a tool or prompt, or a resource's URI.
	name string
	// backend is the backend a caller named (resources/read) or a list is
	// taken from (prompts/list, resources/list).
	backend     string
	args        any               // tools/call: as given to CallTool
	promptArgs  map[string]string // prompts/get
	fallbackFor string            // tools/call: the tool this call is the fallback of
	// complete is the request of a completion/complete; name is then its
	// ref's prompt (catalogue name) or URI.
	complete *mcp.CompleteParams

	// Found on the way down.
	// start is when a tools/call's one deadline began: the resolve layer
	// sets it before it may wait for the backend (see deadlineLayer).
	start  time.Time
	b      *backend
	e      entry        // tools/call: the catalogue entry
	target string       // the operation's own name on the backend (tool, prompt)
	vw     *view        // tools/call: the profile's view
	rec    *AuditRecord // &recBuf while auditing, else nil
	recBuf AuditRecord
	// The arguments of a tools/call: their JSON text, its decoding (once,
	// shared by audit and validation) and why they are refused.
	raw     []byte
	argErr  error
	val     any
	decoded bool
	invalid string // the validation message of invalid arguments

	// Found on the way back.
	size       int   // the result's JSON size (tools/call; see callSized)
	retries    int   // retries made (see layer_retry.go)
	noRetry    bool  // the last attempt could not get a connection: not retried
	fellBack   bool  // the result is the fallback's
	primaryErr error // the error that made the call use its fallback
}

// handler runs an op through the rest of the pipeline and returns its
// result: a *mcp.CallToolResult, *mcp.GetPromptResult,
// *mcp.ReadResourceResult, []*mcp.Prompt, []*mcp.Resource,
// []*mcp.ResourceTemplate or *mcp.CompleteResult by method.
type handler func(ctx context.Context, o *op) (any, error)

// layer is one concern of the pipeline: it returns a handler that does its
// job around next.
type layer func(h *Host, next handler) handler

// The pipeline, from the caller down to the transport layer: upper runs on
// the catalogue's account, lower on one backend's.
var (
	upper = []layer{auditLayer, resolveLayer, policyLayer, validateLayer, fallbackLayer}
	lower = []layer{breakerLayer, deadlineLayer, retryLayer}
)

// buildPipeline composes h's pipeline: h.run is the whole of it; h.send is
// its lower part (breaker, deadline, retry, transport), which a layer uses
// to ask a backend on its own account (resolve lists prompts).
func (h *Host) buildPipeline() {
	h.send = compose(h, lower, h.transportLayer)
	h.run = compose(h, upper, h.send)
}

func compose(h *Host, ls []layer, next handler) handler {
	for i := len(ls) - 1; i >= 0; i-- {
		next = ls[i](h, next)
	}
	return next
}

// opPool recycles ops, with their audit records, between operations: an op
// belongs to one run of the pipeline, and nothing keeps it (or a pointer
// into it) once that run has returned.
var opPool = sync.Pool{New: func() any { return new(op) }}

// runOp runs o, which it takes from the pool's newOp, and gives it back.
func (h *Host) runOp(ctx context.Context, o *op) (any, error) {
	res, err := h.run(ctx, o)
	*o = op{}
	opPool.Put(o)
	return res, err
}

// newOp returns a zero op from the pool; runOp gives it back.
func newOp() *op { return opPool.Get().(*op) }
