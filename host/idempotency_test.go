package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// idemConfig is the fixture server with its echo, sleep and add tools
// idempotent; extra is appended.
const idemConfig = `
[servers.fx]
command = "@FIXTURE@"
args = ["-faults", "-extra"]

[tools.fx__echo]
idempotent = true

[tools.fx__sleep]
idempotent = true

[tools.fx__add]
idempotent = true
`

// auditLog keeps a Host's audit records.
type auditLog struct {
	mu   sync.Mutex
	recs []host.AuditRecord
}

func (a *auditLog) add(r host.AuditRecord) { a.mu.Lock(); a.recs = append(a.recs, r); a.mu.Unlock() }

// idem returns the Idempotency of the records of tool, in order.
func (a *auditLog) idem(tool string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.recs {
		if r.Tool == tool {
			out = append(out, r.Idempotency+"/"+r.Outcome)
		}
	}
	return out
}

// newIdemHost starts a Host on idemConfig+extra with db as its store (nil:
// the host's own in-memory one).
func newIdemHost(t *testing.T, extra string, db *store.DB) (*host.Host, *auditLog) {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(idemConfig+extra, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	log := &auditLog{}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		TerminateGrace: 500 * time.Millisecond,
		Audit:          log.add,
		Store:          db,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, log
}

// backendCalls returns how many tools/call the host's fixture server has
// served, not counting the stats call that asks.
func backendCalls(t *testing.T, h *host.Host) int {
	t.Helper()
	res, err := h.CallTool(context.Background(), "fx__stats", nil)
	if err != nil || res.IsError {
		t.Fatalf("stats: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var st struct{ Calls int }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Calls - 1
}

func keyed(key string) context.Context {
	return host.WithIdempotencyKey(host.WithClient(context.Background(), "alice"), key)
}

func replayed(res *mcp.CallToolResult) bool {
	v, _ := res.Meta[host.MetaIdempotentReplay].(bool)
	return v
}

func TestIdempotencyReplay(t *testing.T) {
	h, log := newIdemHost(t, "", nil)
	key := "'; DROP TABLE idempotency; --"
	first, err := h.CallTool(keyed(key), "fx__echo", map[string]any{"text": "once"})
	if err != nil || text(t, first) != "once" || replayed(first) {
		t.Fatalf("first: %v %+v", err, first)
	}
	// Same key, same arguments written another way: the stored result.
	second, err := h.CallTool(keyed(key), "fx__echo", json.RawMessage(` { "text" : "once" } `))
	if err != nil || text(t, second) != "once" || !replayed(second) {
		t.Fatalf("second: %v %+v", err, second)
	}
	if n := backendCalls(t, h); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
	// Another client's same key is its own.
	other := host.WithIdempotencyKey(host.WithClient(context.Background(), "bob"), key)
	if res, err := h.CallTool(other, "fx__echo", map[string]any{"text": "bob"}); err != nil || text(t, res) != "bob" || replayed(res) {
		t.Fatalf("bob: %v %+v", err, res)
	}
	if got := log.idem("fx__echo"); strings.Join(got, ",") != "first/ok,replay/ok,first/ok" {
		t.Fatalf("audit: %v", got)
	}
	db, err := h.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.SQL().QueryRow("SELECT count(*) FROM idempotency").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("idempotency rows %d %v", rows, err)
	}
}

func TestIdempotencyConflict(t *testing.T) {
	h, _ := newIdemHost(t, "", nil)
	if _, err := h.CallTool(keyed("k"), "fx__add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	_, err := h.CallTool(keyed("k"), "fx__add", map[string]any{"a": 1, "b": 3})
	if !errors.Is(err, host.ErrIdempotencyConflict) || host.ErrorKind(err) != host.KindIdempotencyConflict || host.HTTPStatus(host.ErrorKind(err)) != 409 {
		t.Fatalf("other arguments: %v", err)
	}
	_, err = h.CallTool(keyed("k"), "fx__echo", map[string]any{"text": "x"})
	if !errors.Is(err, host.ErrIdempotencyConflict) || !strings.Contains(err.Error(), `"fx__add"`) {
		t.Fatalf("other tool: %v", err)
	}
	if n := backendCalls(t, h); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
}

func TestIdempotencyConcurrentDuplicates(t *testing.T) {
	h, _ := newIdemHost(t, "", nil)
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 10)
	errs := make([]error, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = h.CallTool(keyed("together"), "fx__sleep", map[string]any{"ms": 300})
		}()
	}
	wg.Wait()
	replays := 0
	for i, res := range results {
		if errs[i] != nil || res.IsError || text(t, res) != "slept 300ms" {
			t.Fatalf("call %d: %v %+v", i, errs[i], res)
		}
		if replayed(res) {
			replays++
		}
	}
	if replays != 9 {
		t.Fatalf("%d replays, want 9", replays)
	}
	if n := backendCalls(t, h); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
}

func TestIdempotencyFailureDoesNotPoison(t *testing.T) {
	h, log := newIdemHost(t, "", nil)
	// The first call fails (its caller's deadline passes): not a
	// completed call, so the key is released.
	ctx, cancel := context.WithTimeout(keyed("retry-me"), 50*time.Millisecond)
	defer cancel()
	if _, err := h.CallTool(ctx, "fx__sleep", map[string]any{"ms": 1000}); !errors.Is(err, host.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first: %v, want a timeout", err)
	}
	res, err := h.CallTool(keyed("retry-me"), "fx__sleep", map[string]any{"ms": 1000})
	if err != nil || text(t, res) != "slept 1000ms" || replayed(res) {
		t.Fatalf("retry: %v %+v", err, res)
	}
	// A tool's own error result is a completed call: replayed.
	h2, _ := newIdemHost(t, "[tools.fx__fail]\nidempotent = true\n", nil)
	for i := range 2 {
		res, err := h2.CallTool(keyed("f"), "fx__fail", map[string]any{"message": "no"})
		if err != nil || !res.IsError || replayed(res) != (i == 1) {
			t.Fatalf("fail %d: %v %+v", i, err, res)
		}
	}
	if n := backendCalls(t, h2); n != 1 {
		t.Fatalf("fail: backend calls %d, want 1", n)
	}
	if got := log.idem("fx__sleep"); len(got) != 2 || got[0] != "/timeout" || got[1] != "first/ok" {
		t.Fatalf("audit: %v", got)
	}
}

func TestIdempotencyKeyIgnoredOrRefused(t *testing.T) {
	h, log := newIdemHost(t, "", nil)
	// A tool that is not idempotent runs every time; the audit says why.
	for range 2 {
		if res, err := h.CallTool(keyed("k"), "fx__nested", map[string]any{"user": map[string]any{"name": "a", "age": 1}}); err != nil || replayed(res) {
			t.Fatalf("nested: %v %+v", err, res)
		}
	}
	if got := log.idem("fx__nested"); strings.Join(got, ",") != "ignored/ok,ignored/ok" {
		t.Fatalf("audit: %v", got)
	}
	for _, bad := range []string{strings.Repeat("k", host.MaxIdempotencyKey+1), "line\nbreak", "nul\x00", "\xff\xfe"} {
		_, err := h.CallTool(keyed(bad), "fx__echo", map[string]any{"text": "x"})
		if !errors.Is(err, host.ErrInvalidArguments) || !strings.Contains(err.Error(), "idempotency key") {
			t.Fatalf("key %q: %v", bad, err)
		}
	}
	if err := host.CheckIdempotencyKey(strings.Repeat("é", host.MaxIdempotencyKey/2)); err != nil {
		t.Fatal(err)
	}
	if n := backendCalls(t, h); n != 2 {
		t.Fatalf("backend calls %d, want 2", n)
	}
}

func TestIdempotencyTTL(t *testing.T) {
	h, _ := newIdemHost(t, "[store]\nidempotency_ttl = \"300ms\"\n", nil)
	if _, err := h.CallTool(keyed("t"), "fx__echo", map[string]any{"text": "a"}); err != nil {
		t.Fatal(err)
	}
	db, err := h.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Past the TTL by the database's clock, the key runs again (with any
	// arguments: the old result is gone).
	testutil.Eventually(t, 10*time.Second, func() bool {
		var live int
		if err := db.SQL().QueryRow("SELECT count(*) FROM idempotency WHERE expires_us > ?", time.Now().UnixMicro()).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return live == 0
	}, "the result never expired")
	res, err := h.CallTool(keyed("t"), "fx__echo", map[string]any{"text": "b"})
	if err != nil || text(t, res) != "b" || replayed(res) {
		t.Fatalf("after the TTL: %v %+v", err, res)
	}
	if n := backendCalls(t, h); n != 2 {
		t.Fatalf("backend calls %d, want 2", n)
	}
}

func TestIdempotencyLargeResultNotStored(t *testing.T) {
	h, log := newIdemHost(t, "[tools.fx__big]\nidempotent = true\n", nil)
	for range 2 {
		res, err := h.CallTool(keyed("big"), "fx__big", map[string]any{"bytes": host.MaxIdempotentResult + 10})
		if err != nil || res.IsError || replayed(res) {
			t.Fatalf("big: %v", err)
		}
	}
	if got := log.idem("fx__big"); strings.Join(got, ",") != "not_stored/ok,not_stored/ok" {
		t.Fatalf("audit: %v", got)
	}
}

// Two hosts (two replicas) on one PostgreSQL database: the second's call
// with the key waits for the first's and replays its result.
func TestIdempotencyTwoHostsOnePostgres(t *testing.T) {
	url := pgtest.URL(t)
	open := func(replica string) *store.DB {
		db, err := store.Open(context.Background(), url, store.Options{Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dbA, dbB := open("replica-a"), open("replica-b")
	a, _ := newIdemHost(t, "", dbA)
	b, logB := newIdemHost(t, "", dbB)
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	first := make(chan answer, 1)
	go func() {
		res, err := a.CallTool(keyed("shared"), "fx__sleep", map[string]any{"ms": 4000})
		first <- answer{res, err}
	}()
	testutil.Eventually(t, 10*time.Second, func() bool {
		var n int
		if err := dbB.SQL().QueryRow("SELECT count(*) FROM idempotency WHERE state = 'running'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}, "replica a never claimed the key")
	// A duplicate whose deadline passes while it waits fails with a
	// timeout and leaves the first alone. The deadline leaves the wait
	// time to read who holds the key on a busy machine (100 ms did not,
	// under -race with both cores taken), and the first call 3 s more.
	short, cancel := context.WithTimeout(keyed("shared"), time.Second)
	defer cancel()
	if _, err := b.CallTool(short, "fx__sleep", map[string]any{"ms": 4000}); !errors.Is(err, host.ErrTimeout) || !strings.Contains(err.Error(), "replica-a") {
		t.Fatalf("replica b, short deadline: %v", err)
	}
	res, err := b.CallTool(keyed("shared"), "fx__sleep", map[string]any{"ms": 4000})
	if err != nil || text(t, res) != "slept 4000ms" || !replayed(res) {
		t.Fatalf("replica b: %v %+v", err, res)
	}
	if fa := <-first; fa.err != nil || replayed(fa.res) {
		t.Fatalf("replica a: %v %+v", fa.err, fa.res)
	}
	if na, nb := backendCalls(t, a), backendCalls(t, b); na != 1 || nb != 0 {
		t.Fatalf("backend calls a=%d b=%d, want 1 and 0", na, nb)
	}
	if got := logB.idem("fx__sleep"); fmt.Sprint(got) != "[/timeout replay/ok]" {
		t.Fatalf("audit of b: %v", got)
	}
}

// hintedTools is goTools whose tools named in hint say idempotentHint.
type hintedTools struct {
	*goTools
	hint map[string]bool
}

func (g hintedTools) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	tools, err := g.goTools.ListTools(ctx)
	for _, t := range tools {
		if g.hint[t.Name] {
			t.Annotations = &mcp.ToolAnnotations{IdempotentHint: true}
		}
	}
	return tools, err
}

// A tool whose annotations say idempotentHint is idempotent without a
// [tools.NAME] table; one without the hint ignores the key.
func TestIdempotencyAnnotationHint(t *testing.T) {
	h, log := newIdemHost(t, "", nil)
	var mu sync.Mutex
	runs := map[string]int{}
	count := func(name string) goFunc {
		return func(context.Context, map[string]any) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			runs[name]++
			return fmt.Sprintf("%s run %d", name, runs[name]), nil
		}
	}
	newTr := func() transport.Transport {
		return hintedTools{newGoTools(map[string]goFunc{"hinted": count("hinted"), "plain": count("plain")}), map[string]bool{"hinted": true}}
	}
	ctx := context.Background()
	if err := h.Add(ctx, "go", newTr, nil); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"go__hinted", "go__plain"} {
		for range 2 {
			if _, err := h.CallTool(keyed("k-"+tool), tool, map[string]any{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if runs["hinted"] != 1 || runs["plain"] != 2 {
		t.Fatalf("runs %v, want hinted 1 and plain 2", runs)
	}
	if got := log.idem("go__plain"); fmt.Sprint(got) != "[ignored/ok ignored/ok]" {
		t.Fatalf("audit of plain: %v", got)
	}
}

// A store that cannot answer refuses a keyed call with ErrStoreUnavailable
// (503) at once, rather than run it unprotected; calls without a key go on.
func TestIdempotencyStoreUnavailable(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite::memory:", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newIdemHost(t, "", db)
	db.Close()
	start := time.Now()
	_, err = h.CallTool(keyed("k"), "fx__echo", map[string]any{"text": "x"})
	if !errors.Is(err, host.ErrStoreUnavailable) || host.HTTPStatus(host.ErrorKind(err)) != 503 {
		t.Fatalf("keyed call on a closed store: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	if res, err := h.CallTool(context.Background(), "fx__echo", map[string]any{"text": "x"}); err != nil || text(t, res) != "x" {
		t.Fatalf("call without a key: %v %+v", err, res)
	}
}
