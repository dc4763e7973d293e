package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// Rate limits (issue 25, item 4). A rate key ("60/m", "10/s burst 3"; see
// config.RateLimit) is a token bucket:
//
//   - [serve.clients.NAME] rate counts the calls of that client (the one
//     WithClient names), over all its sessions and profiles;
//   - [profiles.NAME] rate counts every call made in the profile, by all its
//     clients together;
//   - [tools.NAME] rate counts every call of that tool, by anyone in any
//     profile: it protects the backend's own quota.
//
// A call takes one token from every bucket that applies to it, or from
// none: when one is empty the call is refused with a *RateLimitedError
// (ErrRateLimited) and the others keep their tokens. A fallback call
// ([tools.NAME] fallback) takes from its own tool's bucket only: its
// caller's client and profile paid for the call already.
//
// In one process the buckets are golang.org/x/time/rate limiters. When the
// host's store is shared by replicas (PostgreSQL; store.DB.Shared) they are
// rows of rate_buckets, refilled by the database's clock, so that the
// replicas together honour one limit. Each store access is bounded
// (RateStoreTimeout); when the store does not answer within it the call is
// decided by this process's own bucket instead (the limit is then per
// replica until the store answers again: a lost store neither stops every
// call nor lifts the limits). Such fallbacks are counted (Host.RateStats)
// and logged once per outage.

// RateStoreTimeout bounds each access to a shared store by the rate layer.
const RateStoreTimeout = time.Second

// MetaRetryAfter is the _meta key of an isError result refused by a rate
// limit: the seconds to wait before calling again (a whole number, at
// least 1), as HTTP's Retry-After says it.
const MetaRetryAfter = "io.toolhost/retry-after"

// RateLimitedError is the error of a call over a rate limit. It wraps
// ErrRateLimited (kind rate_limited, HTTP 429).
type RateLimitedError struct {
	// Limit names the limit that refused the call, as its key and value:
	// `serve.clients.bot.rate "60/m"`, `profiles.ro.rate "10/s burst 3"`,
	// `tools.gh__search.rate "1000/h"` (the first, in that order, when
	// several did).
	Limit string
	// RetryAfter is how long until every limit the call is under has a
	// token again (on its own: other callers may take them first).
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%v by %s: try again in %ds", ErrRateLimited, e.Limit, e.RetryAfterSeconds())
}

// Unwrap returns ErrRateLimited.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least
// 1: the value of an HTTP Retry-After header (RFC 9110, section 10.2.3)
// and of MetaRetryAfter.
func (e *RateLimitedError) RetryAfterSeconds() int {
	s := math.Ceil(e.RetryAfter.Seconds())
	switch {
	case s < 1 || math.IsNaN(s):
		return 1
	case s > math.MaxInt32:
		return math.MaxInt32
	}
	return int(s)
}

// RetryAfter returns the seconds a caller refused by a rate limit should
// wait (RateLimitedError.RetryAfterSeconds) and true, when err is such a
// refusal.
func RetryAfter(err error) (int, bool) {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfterSeconds(), true
	}
	return 0, false
}

// addRetryAfter puts MetaRetryAfter in the _meta of res, the isError
// result of err, when err is a rate limit's refusal.
func addRetryAfter(res *mcp.CallToolResult, err error) {
	if s, ok := RetryAfter(err); ok {
		res.Meta[MetaRetryAfter] = s
	}
}

// RateStats counts the rate layer's refusals and fallbacks.
type RateStats struct {
	Refused int64 // calls refused by a rate limit
	// StoreFallbacks counts the calls decided by this process's own
	// buckets because the shared store did not answer within
	// RateStoreTimeout; StoreDown is whether the last access failed.
	StoreFallbacks int64
	StoreDown      bool
}

// RateStats returns the rate layer's counters since the host started.
func (h *Host) RateStats() RateStats {
	r := &h.rates
	return RateStats{Refused: r.refused.Load(), StoreFallbacks: r.fallbacks.Load(), StoreDown: r.outage.Load()}
}

// rateLimits is a Host's rate limit state.
type rateLimits struct {
	table atomic.Pointer[rateTable]
	// mu serialises the building of tables, and makes a local take from
	// several limiters all-or-none.
	mu sync.Mutex
	// now is the clock of the local buckets (tests); nil: time.Now.
	now func() time.Time
	// bound overrides RateStoreTimeout (tests); 0: RateStoreTimeout.
	bound time.Duration

	refused   atomic.Int64
	fallbacks atomic.Int64
	outage    atomic.Bool
}

// rateTable is the buckets of one configuration.
type rateTable struct {
	cfg                      *config.Config
	empty                    bool
	clients, profiles, tools map[string]*rateBucket
}

// rateBucket is one limit's bucket.
type rateBucket struct {
	key   string // the store's key: "client:NAME", "profile:NAME", "tool:NAME"
	limit string // RateLimitedError.Limit
	rl    config.RateLimit
	local *rate.Limiter
}

// current returns the table of cfg, building it when cfg is new: a bucket
// whose key and limit are unchanged keeps its tokens across a reload.
func (r *rateLimits) current(cfg *config.Config) *rateTable {
	if t := r.table.Load(); t != nil && t.cfg == cfg {
		return t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	if old != nil && old.cfg == cfg {
		return old
	}
	t := &rateTable{cfg: cfg, clients: map[string]*rateBucket{}, profiles: map[string]*rateBucket{}, tools: map[string]*rateBucket{}}
	add := func(m map[string]*rateBucket, kind, name, key string, rl config.RateLimit) {
		if rl.IsZero() {
			return
		}
		b := &rateBucket{key: kind + ":" + name, limit: key + ` "` + rl.String() + `"`, rl: rl}
		if old != nil {
			if ob := oldBucket(old, kind, name); ob != nil && ob.rl == rl {
				b.local = ob.local
			}
		}
		if b.local == nil {
			b.local = rate.NewLimiter(rate.Limit(rl.PerSecond()), rl.Burst)
		}
		m[name] = b
	}
	for name, c := range cfg.Serve.Clients {
		if c != nil {
			add(t.clients, "client", name, "serve.clients."+name+".rate", c.RateLimit)
		}
	}
	for name, p := range cfg.Profiles {
		if p != nil {
			add(t.profiles, "profile", name, "profiles."+name+".rate", p.RateLimit)
		}
	}
	for name, o := range cfg.Tools {
		if o != nil {
			add(t.tools, "tool", name, "tools."+name+".rate", o.RateLimit)
		}
	}
	t.empty = len(t.clients)+len(t.profiles)+len(t.tools) == 0
	r.table.Store(t)
	return t
}

func oldBucket(t *rateTable, kind, name string) *rateBucket {
	switch kind {
	case "client":
		return t.clients[name]
	case "profile":
		return t.profiles[name]
	}
	return t.tools[name]
}

// buckets returns the buckets that apply to the call o made in ctx, in the
// order client, profile, tool, in bs.
func (t *rateTable) buckets(ctx context.Context, o *op, bs *[3]*rateBucket) []*rateBucket {
	out := bs[:0]
	if o.req.fallbackFor == "" {
		if len(t.clients) > 0 {
			if b := t.clients[clientOf(ctx)]; b != nil {
				out = append(out, b)
			}
		}
		if b := t.profiles[o.req.profile]; b != nil {
			out = append(out, b)
		}
	}
	if b := t.tools[o.req.name]; b != nil {
		out = append(out, b)
	}
	return out
}

// take takes a token from every bucket of bs or from none, and returns
// the refusal when one has none.
func (h *Host) takeRate(ctx context.Context, bs []*rateBucket) error {
	r := &h.rates
	if db := h.rateStore(ctx); db != nil {
		err := r.takeShared(ctx, db, bs)
		var rl *RateLimitedError
		if err == nil || errors.As(err, &rl) {
			if r.outage.Swap(false) {
				h.logger.Info("rate limits: the store answers again; limits are shared by the replicas again", "store", db.String())
			}
			return err
		}
		r.fallbacks.Add(1)
		if !r.outage.Swap(true) {
			h.logger.Warn("rate limits: the store did not answer; each replica applies the limits on its own until it does",
				"store", db.String(), "bound", r.storeBound().String(), "error", err.Error())
		}
	}
	return r.takeLocal(bs)
}

func (r *rateLimits) storeBound() time.Duration {
	if r.bound > 0 {
		return r.bound
	}
	return RateStoreTimeout
}

// rateStore returns the store when it is shared by replicas (the
// buckets are then its rows), nil when the buckets are this process's.
// A shared store that is not open yet is opened within the bound; one
// that another call is opening now is not waited for (nil: local).
func (h *Host) rateStore(ctx context.Context) *store.DB {
	if db := h.opts.Store; db != nil {
		if db.Shared() {
			return db
		}
		return nil
	}
	u := h.config().Store.URL
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return nil
	}
	s := &h.state
	if !s.mu.TryLock() {
		h.rates.fallbacks.Add(1)
		return nil
	}
	db := s.db
	s.mu.Unlock()
	if db != nil {
		return db
	}
	octx, cancel := context.WithTimeout(ctx, h.rates.storeBound())
	defer cancel()
	db, err := h.db(octx)
	if err != nil {
		h.rates.fallbacks.Add(1)
		if !h.rates.outage.Swap(true) {
			h.logger.Warn("rate limits: the store could not be opened; each replica applies the limits on its own until it can", "error", err.Error())
		}
		return nil
	}
	return db
}

// takeShared takes from the store's buckets: each take is atomic; when a
// later bucket refuses, the tokens taken from the earlier ones are given
// back. Errors other than a refusal are the store's (the caller falls
// back to the local buckets).
func (r *rateLimits) takeShared(ctx context.Context, db *store.DB, bs []*rateBucket) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.storeBound())
	defer cancel()
	for i, b := range bs {
		ok, wait, err := db.RateTake(ctx, b.key, float64(b.rl.Burst), b.rl.PerSecond())
		if err == nil && ok {
			continue
		}
		for _, g := range bs[:i] {
			// Best effort within the same bound: a token not given back
			// is one call fewer, never one more.
			_ = db.RateGive(ctx, g.key, float64(g.rl.Burst))
		}
		if err != nil {
			return err
		}
		r.refused.Add(1)
		return &RateLimitedError{Limit: b.limit, RetryAfter: wait}
	}
	return nil
}

// takeLocal takes from the buckets' limiters: all or none (checked, then
// taken, under mu).
func (r *rateLimits) takeLocal(bs []*rateBucket) error {
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var refusal *RateLimitedError
	for _, b := range bs {
		tokens := b.local.TokensAt(now)
		if tokens >= 1 {
			continue
		}
		wait := time.Duration(math.Ceil((1 - tokens) / b.rl.PerSecond() * float64(time.Second)))
		if refusal == nil {
			refusal = &RateLimitedError{Limit: b.limit}
		}
		refusal.RetryAfter = max(refusal.RetryAfter, wait)
	}
	if refusal != nil {
		r.refused.Add(1)
		return refusal
	}
	for _, b := range bs {
		b.local.AllowN(now, 1)
	}
	return nil
}

// TakeRate takes one token for a call of tool that the gateway serves
// above the pipeline (code mode's run_code, issue 27), from the buckets a
// catalogue call by ctx's client (WithClient) through v would take from:
// the client's [serve.clients.NAME] rate, the profile's [profiles.NAME]
// rate and [tools.TOOL] rate when one is set for that name (from all of
// them or from none, as a catalogue call). It returns nil when no limit
// applies or every one has a token, else a *RateLimitedError
// (ErrRateLimited) naming the first limit that refused. The calls that
// such a tool makes through v take tokens of their own: a code mode run
// with three inner calls costs four.
func (v *View) TakeRate(ctx context.Context, tool string) error {
	return v.h.takeRateFor(ctx, v.name, tool)
}

// TakeRate is View.TakeRate for the Host's own view (no profile).
func (h *Host) TakeRate(ctx context.Context, tool string) error { return h.takeRateFor(ctx, "", tool) }

func (h *Host) takeRateFor(ctx context.Context, profile, tool string) error {
	t := h.rates.current(h.config())
	if t.empty {
		return nil
	}
	o := &op{req: request{method: "tools/call", profile: profile, name: tool}}
	var arr [3]*rateBucket
	bs := t.buckets(ctx, o, &arr)
	if len(bs) == 0 {
		return nil
	}
	return h.takeRate(ctx, bs)
}
