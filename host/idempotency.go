package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/store"
)

// Idempotency keys (issue 25, item 5). A caller that may send a tool call
// again (a client retrying after a lost answer, a load balancer replaying
// a request) gives it a key: the REST invoke's idempotency_key, MCP
// _meta["io.toolhost/idempotency-key"] on tools/call, or
// WithIdempotencyKey in Go. For a tool marked idempotent ([tools.NAME]
// idempotent = true, or annotations with idempotentHint: true) the first
// call with a key runs and its result is stored ([store] idempotency_ttl,
// default 24h); a call made again with the key and the same tool and
// arguments gets that result without calling the backend (its _meta says
// "io.toolhost/idempotent-replay": true); one made while the first is
// still running waits for it (within its own deadline); the key reused for
// another tool or with other arguments is ErrIdempotencyConflict. A key
// on a tool that is not idempotent is ignored: the call runs, and its
// audit record says Idempotency "ignored".
//
// Keys are scoped by the caller: the client (WithClient, a gateway's
// [serve.clients.NAME]), else the profile of the view, else the Host's
// own calls. Two clients never see each other's keys.

// Idempotency _meta keys (MCP 2025-11-25 basic, "_meta": our reverse-DNS
// prefix).
const (
	// MetaIdempotencyKey is the _meta key of a tools/call request that
	// carries its idempotency key (a string, see CheckIdempotencyKey).
	MetaIdempotencyKey = "io.toolhost/idempotency-key"
	// MetaIdempotentReplay is set (true) in the _meta of a result that is
	// the stored result of an earlier call with the same key.
	MetaIdempotentReplay = "io.toolhost/idempotent-replay"
)

// MaxIdempotencyKey is the longest idempotency key, in bytes.
const MaxIdempotencyKey = 256

// MaxIdempotentResult is the largest result (its JSON text, in bytes)
// that is stored for replay: a call with a larger result runs, its result
// is returned, and its key is released (the next call with the key runs
// again; the audit record says Idempotency "not_stored").
const MaxIdempotentResult = 1 << 20

// What an audit record says of a call's idempotency key
// (AuditRecord.Idempotency).
const (
	IdemFirst     = "first"      // the call ran and its result was stored
	IdemReplay    = "replay"     // the stored result of an earlier call was returned
	IdemIgnored   = "ignored"    // the tool is not idempotent: the key was ignored
	IdemNotStored = "not_stored" // the call ran but its result was not stored (too large, or its claim was lost)
)

// Bounds of the store's part in a keyed call.
const (
	// idemStoreTimeout bounds each store query of a keyed call.
	idemStoreTimeout = 5 * time.Second
	// idemOpenTimeout bounds the opening of the host's store by the first
	// keyed call (when nothing opened it before).
	idemOpenTimeout = 15 * time.Second
	// idemLeaseMargin is added to the call's deadline to make its claim's
	// lease: past it, another replica may take the key over.
	idemLeaseMargin = 5 * time.Second
	// idemPollMin and idemPollMax bound the backoff of a call waiting for
	// another replica's call with the same key.
	idemPollMin = 10 * time.Millisecond
	idemPollMax = 500 * time.Millisecond
	// idemSweepEvery is how often expired rows are deleted, once a keyed
	// call has been made.
	idemSweepEvery = 10 * time.Minute
)

type idemKeyCtx struct{}

// WithIdempotencyKey returns a copy of ctx that gives the tool calls made
// with it the idempotency key key (see the package comment above the
// constants MetaIdempotencyKey). An empty key is no key. A key that
// CheckIdempotencyKey refuses fails the call with its error
// (ErrInvalidArguments).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, idemKeyCtx{}, key)
}

// idemKeyOf returns the key WithIdempotencyKey put in ctx, or "".
func idemKeyOf(ctx context.Context) string {
	s, _ := ctx.Value(idemKeyCtx{}).(string)
	return s
}

// CheckIdempotencyKey returns nil for a key a call may carry: 1 to
// MaxIdempotencyKey bytes of valid UTF-8, every character printable
// (unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the
// ASCII space; no control characters). Otherwise an error wrapping
// ErrInvalidArguments says what is wrong.
func CheckIdempotencyKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: the idempotency key is empty", ErrInvalidArguments)
	case len(key) > MaxIdempotencyKey:
		return fmt.Errorf("%w: the idempotency key is %d bytes, longer than %d", ErrInvalidArguments, len(key), MaxIdempotencyKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: the idempotency key is not valid UTF-8", ErrInvalidArguments)
	}
	for i, r := range key {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: the idempotency key has a character that is not printable (%U at byte %d)", ErrInvalidArguments, r, i)
		}
	}
	return nil
}

// idempotency is a Host's state for keyed calls: the calls in flight in
// this process by scoped key (a duplicate waits on its channel rather than
// asking the store), and the sweep of expired rows.
type idempotency struct {
	mu      sync.Mutex
	flights map[string]chan struct{}
	sweep   sync.Once
}

// join returns the channel of the flight of key in this process, and
// whether the caller leads it (a new flight, which the caller ends with
// leave); a follower waits for the channel to close.
func (s *idempotency) join(key string) (chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.flights[key]; ok {
		return ch, false
	}
	if s.flights == nil {
		s.flights = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	s.flights[key] = ch
	return ch, true
}

// leave ends the flight of key that the caller leads.
func (s *idempotency) leave(key string, ch chan struct{}) {
	s.mu.Lock()
	delete(s.flights, key)
	s.mu.Unlock()
	close(ch)
}

// idempotent reports whether e's calls may be answered from a stored
// result: [tools.NAME] idempotent = true, or the tool's annotations say
// idempotentHint (a hint is enough here: a replay only gives the caller
// the answer to its own earlier request; the retry layer, which would
// send a request again, never trusts it).
func (e *entry) idempotent() bool {
	return e.opts != nil && e.opts.Idempotent || e.tool != nil && e.tool.Annotations != nil && e.tool.Annotations.IdempotentHint
}

// idemScope returns the store's key of a call's key: the caller's key
// scoped by its client, else its profile, else the Host's own calls,
// written so that no two scopes can make the same text.
func idemScope(ctx context.Context, profile, key string) string {
	kind, who := "host", ""
	if c := clientOf(ctx); c != "" {
		kind, who = "client", c
	} else if profile != "" {
		kind, who = "profile", profile
	}
	return kind + ":" + strconv.Itoa(len(who)) + ":" + who + ":" + key
}

// idemArgsHash returns the hex SHA-256 of o's canonical arguments (the
// audit record's canonical form: keys sorted at every level, no
// insignificant space, numbers as sent), or of their text when they do
// not decode.
func idemArgsHash(o *op) string {
	var canonical []byte
	if v, err := o.req.args.value(); err == nil {
		raw, _ := o.req.args.text()
		canonical, _ = canonicalArgs(v, nil, len(raw))
	} else {
		canonical, _ = o.req.args.text()
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// idemCall makes the keyed call o (the key already checked, the tool
// idempotent) through next: see the comment above MetaIdempotencyKey.
func (h *Host) idemCall(ctx context.Context, o *op, next handler, key string) (any, error) {
	// The store may be opened (and migrated) here, at the first need: not
	// under the caller's deadline, which could cut a migration short, but
	// bounded all the same.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idemOpenTimeout)
	db, err := h.db(octx)
	cancel()
	if err != nil {
		return nil, err
	}
	h.startIdemSweep(db)
	scoped := idemScope(ctx, o.req.profile, key)
	claim := store.IdemClaim{Key: scoped, Tool: o.req.name, ArgsHash: idemArgsHash(o)}
	// The call's one deadline bounds its waiting too.
	wctx, cancel := o.dst.b.bound(ctx, o.req.start)
	defer cancel()
	for {
		ch, lead := h.idem.join(scoped)
		if !lead {
			select {
			case <-ch:
				continue // the first is done: ask the store
			case <-wctx.Done():
				return nil, idemWaitError(wctx, "another call with this key in this process")
			}
		}
		res, err := h.idemLead(ctx, wctx, o, next, db, claim)
		h.idem.leave(scoped, ch)
		return res, err
	}
}

// idemLead claims the key in the store and makes the call, replays the
// stored result, waits for another replica's call, or refuses a conflict.
func (h *Host) idemLead(ctx, wctx context.Context, o *op, next handler, db *store.DB, claim store.IdemClaim) (any, error) {
	poll := idemPollMin
	for {
		dl, _ := wctx.Deadline()
		claim.Lease = time.Until(dl) + idemLeaseMargin
		qctx, cancel := context.WithTimeout(wctx, idemStoreTimeout)
		a, err := db.ClaimIdempotency(qctx, claim)
		cancel()
		if err != nil {
			if wctx.Err() != nil {
				return nil, idemWaitError(wctx, "the store")
			}
			return nil, fmt.Errorf("%w: idempotency key: %v", ErrStoreUnavailable, err)
		}
		switch a.Status {
		case store.IdemClaimed:
			return h.idemRun(ctx, o, next, db, claim.Key, a.Token)
		case store.IdemDone:
			return idemReplay(o, a.Result)
		case store.IdemConflict:
			if a.Tool != claim.Tool {
				return nil, fmt.Errorf("%w: the key was first used for tool %q; use a new key for each call", ErrIdempotencyConflict, a.Tool)
			}
			return nil, fmt.Errorf("%w: the key was first used with other arguments; use a new key for each call", ErrIdempotencyConflict)
		}
		// Running on another replica (or by a call of this process that
		// lost its claim): ask again, backing off, within the deadline.
		wait := min(poll, max(a.ExpiresIn, time.Millisecond))
		poll = min(2*poll, idemPollMax)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return nil, idemWaitError(wctx, fmt.Sprintf("the call with this key running on %s", a.Owner))
		}
	}
}

// idemRun makes the call whose key it claimed (token) and stores its
// result when it completed (a result, the tool's isError included), or
// releases the key when it did not (an error, a refusal the host made as
// a result), so that the next call with the key runs.
func (h *Host) idemRun(ctx context.Context, o *op, next handler, db *store.DB, key, token string) (any, error) {
	done := false
	// Whatever happens below (a panic included), a claim not completed is
	// released; the store's work is bounded and outlives a cancelled call.
	defer func() {
		if done {
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idemStoreTimeout)
		defer cancel()
		if err := db.ReleaseIdempotency(sctx, key, token); err != nil {
			// Its lease ends it: the key is free once the claim is stale.
			h.logger.Warn("idempotency key not released; it is free when its claim expires", "tool", o.req.name, "error", err)
		}
	}()
	r, err := next(ctx, o)
	res, _ := r.(*mcp.CallToolResult)
	if err != nil || res == nil || res.Meta[MetaErrorKind] != nil {
		return r, err
	}
	text, merr := json.Marshal(res)
	switch {
	case merr != nil:
		h.logger.Warn("idempotent result not stored: it does not encode", "tool", o.req.name, "error", merr)
	case len(text) > MaxIdempotentResult:
		h.logger.Warn("idempotent result not stored: too large; the key is released", "tool", o.req.name, "bytes", len(text), "limit", MaxIdempotentResult)
	default:
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idemStoreTimeout)
		ok, serr := db.CompleteIdempotency(sctx, key, token, text, h.config().Store.IdemTTL())
		cancel()
		switch {
		case serr != nil:
			// The call ran: its result is returned, and the claim is
			// released (or, if the store is gone, ends with its lease):
			// the next call with the key runs again.
			h.logger.Warn("idempotent result not stored", "tool", o.req.name, "error", serr)
		case !ok:
			h.logger.Warn("idempotent result not stored: the key's claim expired and was taken over", "tool", o.req.name)
			done = true
		default:
			done = true
			o.out.record.Idempotency = IdemFirst
			return res, nil
		}
	}
	o.out.record.Idempotency = IdemNotStored
	return res, nil
}

// idemReplay returns the stored result text as the answer to o, marked as
// a replay.
func idemReplay(o *op, text []byte) (any, error) {
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(text, res); err != nil {
		return nil, fmt.Errorf("%w: the stored result of this idempotency key does not decode: %v", ErrStoreUnavailable, err)
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[MetaIdempotentReplay] = true
	o.out.size = len(text)
	o.out.record.Idempotency = IdemReplay
	return res, nil
}

// idemWaitError is the error of a call whose deadline passed while it
// waited for what (the first call with its key, the store).
func idemWaitError(ctx context.Context, what string) error {
	if errors.Is(context.Cause(ctx), context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("waiting for %s: %w", what, context.Canceled)
	}
	return fmt.Errorf("waiting for %s: %w", what, deadlineOf(ctx))
}

// startIdemSweep starts, once, the goroutine that deletes expired
// idempotency rows every idemSweepEvery until the Host closes.
func (h *Host) startIdemSweep(db *store.DB) {
	h.idem.sweep.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			return
		}
		h.every(idemSweepEvery, func() {
			ctx, cancel := context.WithTimeout(h.ctx, idemStoreTimeout)
			n, err := db.SweepIdempotency(ctx)
			cancel()
			if err != nil {
				// What it deleted stays deleted; the next sweep goes on.
				h.logger.Warn("idempotency sweep failed", "deleted", n, "error", err)
			} else if n > 0 {
				h.logger.Debug("idempotency sweep", "deleted", n)
			}
		})
	})
}
