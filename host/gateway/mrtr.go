package gateway

//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/gopool"
)

// A client of protocol 2026-07-28 or later cannot be sent a request during
// a call: an upstream server's elicitation, sampling or roots request must
// come back to it in the call's result ("input required", SEP-2322), and
// the client calls again with its answers and the result's requestState.
// The gateway does that with the upstream call kept running between the
// rounds: the first round starts the call in a goroutine of its own and
// returns when the call ends or asks for input; a retry with the
// requestState hands the answers to the waiting upstream request and waits
// again. A call waits for its client's next round at most as long as the
// host's deadline for the call allows (the upstream request is bounded by
// it); at most maxPending calls wait at once.

// A call whose client declared none of elicitation, sampling and roots can
// never have an input round: Elicit and Sample answer such an upstream
// request with ErrNoClient and Roots with the configured roots, without
// asking the client. That call runs inline, on the round's goroutine and
// with the round's context, with no requestState (see multiRound).
//
// A call whose client declared any of them keeps its goroutine. The design
// that would run the upstream call on the round's goroutine until an input
// request really arrives cannot be built: the round is answered by its
// handler's return (an mcp.ToolHandler, under the receiving middlewares that
// release its max_concurrent slot on return), while the upstream call's
// remaining work (the transport's wait for the backend's answer, then the
// pipeline's layers: output checks, audit) is on that same goroutine's
// stack, and Go cannot move a running call to another goroutine. The input
// request comes on a third goroutine (the backend's request handler) that
// could only answer the round by writing around the handler's return, past
// the middlewares and holding the round's slot while its client thinks,
// which a session with max_concurrent = 1 would deadlock on. So the call
// goes to a goroutine of its own from the start whenever a round may come.

// mrtrDetached counts the calls multiRound has run on a goroutine of their
// own (for tests).
var mrtrDetached atomic.Int64

// maxPending bounds the calls of 2026-07-28 clients in flight through the
// multi-round path.
const maxPending = 1024

// ErrRequestState: a retry's requestState names no call the gateway is
// waiting on (it ended, timed out, or belongs to another client).
var ErrRequestState = errors.New("gateway: unknown or expired requestState")

// pendingCall is one tools/call of a 2026-07-28 client through the
// multi-round path.
type pendingCall struct {
	token  string
	client string
	cancel context.CancelFunc
	asks   chan *ask         // the upstream's requests, one at a time
	done   chan *callOutcome // the call's end (buffered 1)

	mu      sync.Mutex
	next    int
	waiting map[string]*ask // by input request ID, until answered
}

type ask struct {
	id     string
	params mcp.InputRequest
	answer chan mcp.InputResponse // buffered 1
}

type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

type pendingSet struct {
	mu    sync.Mutex
	calls map[string]*pendingCall

	// pool runs the detached calls of sessions without a pool of their
	// own (Streamable HTTP; a stdio session's is its fastTransport's):
	// goroutines kept with their grown stacks (internal/gopool). Made by
	// New, closed by Close.
	pool *gopool.Pool
}

// httpIdleWorkers is how many goroutines the gateway keeps parked for the
// detached calls of HTTP sessions.
const httpIdleWorkers = 16

type askerKey struct{}

// askIn returns the multi-round call of ctx, or nil.
func askIn(ctx context.Context) *pendingCall {
	p, _ := ctx.Value(askerKey{}).(*pendingCall)
	return p
}

// ask sends one input request to the client (through the next round's
// result) and waits for its answer, or for ctx.
func (p *pendingCall) ask(ctx context.Context, params mcp.InputRequest) (mcp.InputResponse, error) {
	if p.asks == nil {
		// An inline call (its client declared nothing to ask with):
		// Elicit, Sample and Roots check the declaration first, so this
		// is a gateway bug, reported rather than a hang.
		return nil, fmt.Errorf("%w: gateway: an input request for a call whose client declared no elicitation, sampling or roots", ErrNoClient)
	}
	p.mu.Lock()
	p.next++
	a := &ask{id: "toolhost-" + strconv.Itoa(p.next), params: params, answer: make(chan mcp.InputResponse, 1)}
	p.waiting[a.id] = a
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, a.id)
		p.mu.Unlock()
	}()
	select {
	case p.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// usesInputRequests reports whether the request comes from a client of
// protocol 2026-07-28 or later (its _meta names the version, SEP-2575).
func usesInputRequests(req *mcp.CallToolRequest) bool {
	if req.Params == nil {
		return false
	}
	v, _ := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

// declares reports whether the request's client declared capability name
// (elicitation, sampling, roots) in its per-request _meta (SEP-2575).
func declares(req *mcp.CallToolRequest, name string) bool {
	if req == nil || req.Params == nil {
		return false
	}
	caps, _ := req.Params.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	_, ok := caps[name]
	return ok
}

type requestKey struct{}

// requestIn returns the first round's request of the multi-round call of
// ctx, or nil.
func requestIn(ctx context.Context) *mcp.CallToolRequest {
	r, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	return r
}

// multiRound runs a tools/call of a 2026-07-28 client: run makes the
// upstream call with the context it is given.
func (ps *profileServer) multiRound(ctx context.Context, req *mcp.CallToolRequest, client string, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	set := ps.pending
	if state := req.Params.RequestState; state != "" {
		set.mu.Lock()
		p := set.calls[state]
		set.mu.Unlock()
		if p == nil || p.client != client {
			return host.KindResult(host.KindBadRequest, fmt.Errorf("%w: call again without it", ErrRequestState).Error()), nil
		}
		p.mu.Lock()
		for id, r := range req.Params.InputResponses {
			if a := p.waiting[id]; a != nil {
				select {
				case a.answer <- r:
				default:
				}
			}
		}
		p.mu.Unlock()
		return ps.nextRound(ctx, p)
	}
	if !declares(req, "elicitation") && !declares(req, "sampling") && !declares(req, "roots") {
		// No input round can come (see the top of this file): inline.
		// Elicit, Sample and Roots still find the call and its request,
		// and answer from them without asking the client.
		p := &pendingCall{client: client}
		return run(context.WithValue(context.WithValue(ctx, askerKey{}, p), requestKey{}, req))
	}
	set.mu.Lock()
	if len(set.calls) >= maxPending {
		set.mu.Unlock()
		return host.KindResult(host.KindRateLimited, fmt.Sprintf("gateway: %d calls are waiting for their clients' input; try again later", maxPending)), nil
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	// The call outlives this round: its context keeps ctx's values but
	// not its cancellation; the host's deadline bounds it.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &pendingCall{token: hex.EncodeToString(b[:]), client: client, cancel: cancel,
		asks: make(chan *ask), done: make(chan *callOutcome, 1), waiting: map[string]*ask{}}
	if set.calls == nil {
		set.calls = map[string]*pendingCall{}
	}
	set.calls[p.token] = p
	set.mu.Unlock()
	cctx = context.WithValue(context.WithValue(cctx, askerKey{}, p), requestKey{}, req)
	mrtrDetached.Add(1)
	goIn(ctx, set.pool, func() {
		res, err := run(cctx)
		p.done <- &callOutcome{res, err}
		// A call that ended while no round waited (its client did not
		// come back) is forgotten; a round that holds it reads done.
		set.mu.Lock()
		delete(set.calls, p.token)
		set.mu.Unlock()
		cancel()
	})
	return ps.nextRound(ctx, p)
}

// nextRound waits for the call's end or its next input request, or for the
// round's client to go away (which ends the call).
func (ps *profileServer) nextRound(ctx context.Context, p *pendingCall) (*mcp.CallToolResult, error) {
	forget := func() {
		ps.pending.mu.Lock()
		delete(ps.pending.calls, p.token)
		ps.pending.mu.Unlock()
		p.cancel()
	}
	select {
	case out := <-p.done:
		forget()
		return out.res, out.err
	case a := <-p.asks:
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{a.id: a.params}, RequestState: p.token}, nil
	case <-ctx.Done():
		// The client went away or cancelled: so does the call (its
		// goroutine ends with it; another round of the same state, if
		// any, may hold its outcome).
		forget()
		return nil, ctx.Err()
	}
}

// errorResult is the isError result of a call that could not be made,
// with its error kind in _meta (host.ErrorResult).
func errorResult(err error) *mcp.CallToolResult { return host.ErrorResult(err) }
