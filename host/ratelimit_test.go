package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// rateHost starts a Host on toml (@FIXTURE@: the fixture server) whose local
// rate buckets read the clock *now, with audit records collected.
type rateHost struct {
	*host.Host
	mu    sync.Mutex
	recs  []host.AuditRecord
	logMu sync.Mutex
	logs  *strings.Builder
}

func newRateHost(t *testing.T, toml string, now func() time.Time, st *store.DB) *rateHost {
	t.Helper()
	toml = strings.ReplaceAll(toml, "@FIXTURE@", testutil.Fixture(t))
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	rh := &rateHost{logs: &strings.Builder{}}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: lockedWriter{&rh.logMu, rh.logs}, Level: hclog.Info}),
		Audit: func(r host.AuditRecord) {
			rh.mu.Lock()
			rh.recs = append(rh.recs, r)
			rh.mu.Unlock()
		},
		Store:          st,
		TerminateGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if now != nil {
		host.SetRateClock(h, now)
	}
	host.SetRateStoreBound(h, 10*time.Second) // a busy machine's PostgreSQL
	rh.Host = h
	return rh
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (rh *rateHost) records() []host.AuditRecord {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	return append([]host.AuditRecord(nil), rh.recs...)
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// call makes a call of tool as client (WithClient; "" for none) in the view
// of profile ("" for the Host's own).
func (rh *rateHost) call(t *testing.T, client, profile, tool string) error {
	t.Helper()
	ctx := context.Background()
	if client != "" {
		ctx = host.WithClient(ctx, client)
	}
	args := map[string]any{"text": "hi"}
	if strings.HasSuffix(tool, "__add") {
		args = map[string]any{"a": 1, "b": 2}
	}
	var err error
	if profile == "" {
		_, err = rh.CallTool(ctx, tool, args)
	} else {
		v, perr := rh.Profile(profile)
		if perr != nil {
			t.Fatal(perr)
		}
		_, err = v.CallTool(ctx, tool, args)
	}
	if err != nil && !errors.Is(err, host.ErrRateLimited) {
		t.Fatalf("%s/%s/%s: %v", client, profile, tool, err)
	}
	return err
}

// TestRateLimitBurstRefill: a tool's rate "3/m" lets 3 calls through at
// once, refuses the 4th with a *RateLimitedError (ErrRateLimited, kind
// rate_limited, HTTP 429) saying which limit and when to try again, audits
// it as refused (decision deny, rule the limit, outcome rate_limited), and
// lets one more through 20 s later (the clock is injected: no sleeping).
func TestRateLimitBurstRefill(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	rh := newRateHost(t, "[servers.t]\ncommand = \"@FIXTURE@\"\n\n[tools.t__echo]\nrate = \"3/m\"\n", clk.now, nil)
	for i := range 3 {
		if err := rh.call(t, "", "", "t__echo"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	err := rh.call(t, "", "", "t__echo")
	var rl *host.RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, host.ErrRateLimited) {
		t.Fatalf("4th call: %v; want a *RateLimitedError", err)
	}
	if rl.Limit != `tools.t__echo.rate "3/m"` || rl.RetryAfter <= 19*time.Second || rl.RetryAfter > 20*time.Second {
		t.Errorf("refusal %+v; want limit tools.t__echo.rate \"3/m\", retry after 20s", rl)
	}
	if k := host.ErrorKind(err); k != host.KindRateLimited || host.HTTPStatus(k) != 429 {
		t.Errorf("kind %q", k)
	}
	if want := `t__echo: rate limited by tools.t__echo.rate "3/m": try again in 20s`; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
	res := host.ErrorResult(err)
	if res.Meta[host.MetaRetryAfter] != 20 || res.Meta[host.MetaErrorKind] != host.KindRateLimited {
		t.Errorf("isError result _meta %v", res.Meta)
	}
	// The other tool is not limited.
	if err := rh.call(t, "", "", "t__add"); err != nil {
		t.Fatal(err)
	}
	clk.add(19 * time.Second)
	if err := rh.call(t, "", "", "t__echo"); err == nil {
		t.Fatal("a call 19s later went through")
	}
	clk.add(time.Second)
	if err := rh.call(t, "", "", "t__echo"); err != nil {
		t.Fatalf("20s later: %v", err)
	}
	if err := rh.call(t, "", "", "t__echo"); err == nil {
		t.Fatal("two calls went through after one token came")
	}
	recs := rh.records()
	var limited int
	for _, r := range recs {
		if r.Outcome == host.OutcomeRateLimited {
			limited++
			if r.Decision != "deny" || r.Rule != `tools.t__echo.rate "3/m"` || !strings.Contains(r.Error, "try again in") || r.Tool != "t__echo" {
				t.Errorf("record %+v", r)
			}
		}
	}
	if limited != 3 || len(recs) != 8 {
		t.Errorf("%d records, %d rate_limited; want 8, 3", len(recs), limited)
	}
	if st := rh.RateStats(); st.Refused != 3 || st.StoreFallbacks != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRateLimitScopes: a client's rate counts its calls (of any tool); a
// profile's counts every call in the profile, by any client; a tool's
// counts every call of the tool, by anyone in any profile. A call refused
// by one limit takes nothing from the others (all or none).
func TestRateLimitScopes(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	rh := newRateHost(t, `
[servers.t]
command = "@FIXTURE@"

[serve.clients.bot]
token = "bbbbbbbbbbbbbbbbbbbbbbbb"
rate = "2/m"

[serve.clients.alice]
token = "aaaaaaaaaaaaaaaaaaaaaaaa"

[profiles.ro]
rate = "1/h"

[tools.t__echo]
rate = "1/m"
`, clk.now, nil)
	limitOf := func(err error) string {
		var rl *host.RateLimitedError
		if errors.As(err, &rl) {
			return rl.Limit
		}
		return "none"
	}
	steps := []struct {
		client, profile, tool string
		want                  string // the limit that refuses, "none"
	}{
		{"bot", "", "t__echo", "none"},                          // bot 1 left, echo 0
		{"bot", "", "t__echo", `tools.t__echo.rate "1/m"`},      // refused by the tool: bot keeps its token
		{"bot", "", "t__add", "none"},                           // bot 0
		{"bot", "", "t__add", `serve.clients.bot.rate "2/m"`},   // bot's own limit, any tool
		{"alice", "", "t__add", "none"},                         // another client: not bot's limit
		{"alice", "", "t__echo", `tools.t__echo.rate "1/m"`},    // the tool's limit counts everyone
		{"alice", "ro", "t__add", "none"},                       // ro 0
		{"", "ro", "t__add", `profiles.ro.rate "1/h"`},          // the profile counts every client
		{"bot", "ro", "t__add", `serve.clients.bot.rate "2/m"`}, // first refusing limit in order client, profile, tool
		{"'; DROP TABLE rate_buckets; --", "", "t__add", "none"},
	}
	for i, s := range steps {
		if got := limitOf(rh.call(t, s.client, s.profile, s.tool)); got != s.want {
			t.Errorf("step %d %+v: refused by %s", i+1, s, got)
		}
	}
	// A minute later bot and the tool have tokens again; ro (1/h) not.
	clk.add(time.Minute)
	if got := limitOf(rh.call(t, "bot", "", "t__echo")); got != "none" {
		t.Errorf("a minute later: refused by %s", got)
	}
	if got := limitOf(rh.call(t, "alice", "ro", "t__add")); got != `profiles.ro.rate "1/h"` {
		t.Errorf("ro a minute later: refused by %s", got)
	}
}

// TestRateLimitReloadKeepsBuckets: Apply of a configuration with the same
// rate keeps the bucket's state (a reload is not a way around a limit);
// a changed rate starts a new bucket; a removed rate lifts the limit.
func TestRateLimitReloadKeepsBuckets(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	src := "[servers.t]\ncommand = \"@FIXTURE@\"\n\n[tools.t__echo]\nrate = \"RATE\"\n"
	rh := newRateHost(t, strings.Replace(src, "RATE", "1/h", 1), clk.now, nil)
	apply := func(rate string) {
		t.Helper()
		s := strings.Replace(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t)), "RATE", rate, 1)
		if rate == "" {
			s = strings.ReplaceAll(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t)), "\n\n[tools.t__echo]\nrate = \"RATE\"\n", "\n")
		}
		cfg, err := config.Parse([]byte(s), &config.Options{Name: "test.toml"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rh.Apply(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := rh.call(t, "", "", "t__echo"); err != nil {
		t.Fatal(err)
	}
	apply("1/h")
	if err := rh.call(t, "", "", "t__echo"); err == nil {
		t.Fatal("after a reload with the same rate, the bucket was full again")
	}
	apply("2/h")
	if err := rh.call(t, "", "", "t__echo"); err != nil {
		t.Fatalf("a new rate: %v", err)
	}
	apply("")
	for range 5 {
		if err := rh.call(t, "", "", "t__echo"); err != nil {
			t.Fatalf("no rate: %v", err)
		}
	}
}

// TestRateLimitSharedPostgres: two Hosts (two replicas) sharing one
// PostgreSQL database honour one limit together: of 20 calls made at once
// through both, exactly the tool's 6 (per hour) go through, the buckets
// being rows of rate_buckets; a client named like SQL changes nothing.
// When the store is lost, calls are decided by each replica's own bucket
// (still limited), counted and logged once.
func TestRateLimitSharedPostgres(t *testing.T) {
	url := pgtest.URL(t)
	open := func() *store.DB {
		db, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dbA, dbB := open(), open()
	src := "[servers.t]\ncommand = \"@FIXTURE@\"\n\n[tools.t__echo]\nrate = \"6/h\"\n"
	a, b := newRateHost(t, src, nil, dbA), newRateHost(t, src, nil, dbB)
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		rh := a
		if i%2 == 1 {
			rh = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rh.call(t, "'; DROP TABLE rate_buckets; --", "", "t__echo"); err != nil {
				refused.Add(1)
			} else {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 6 || refused.Load() != 14 {
		t.Fatalf("%d calls went through, %d refused; want 6 and 14 (one limit for both replicas)", ok.Load(), refused.Load())
	}
	var tokens float64
	if err := dbA.SQL().QueryRow("SELECT tokens FROM rate_buckets WHERE key = $1", "tool:t__echo").Scan(&tokens); err != nil || tokens >= 1 {
		t.Fatalf("bucket row: tokens %v, %v", tokens, err)
	}
	if st := a.RateStats(); st.StoreFallbacks != 0 || st.StoreDown {
		t.Fatalf("stats %+v", st)
	}

	// The store is lost (its handle closed): calls are not stuck and not
	// unlimited: replica a's own bucket (6/h, full) decides.
	dbA.Close()
	var passed int
	for range 8 {
		if err := a.call(t, "", "", "t__echo"); err == nil {
			passed++
		}
	}
	st := a.RateStats()
	if passed != 6 || st.StoreFallbacks != 8 || !st.StoreDown {
		t.Fatalf("store lost: %d of 8 passed, stats %+v; want 6 passed, 8 fallbacks", passed, st)
	}
	a.logged(t, "each replica applies the limits on its own", 1)
}

// logged checks that the host logged msg n times.
func (rh *rateHost) logged(t *testing.T, msg string, n int) {
	t.Helper()
	rh.logMu.Lock()
	defer rh.logMu.Unlock()
	if got := strings.Count(rh.logs.String(), msg); got != n {
		t.Errorf("%q logged %d times; want %d", msg, got, n)
	}
}
