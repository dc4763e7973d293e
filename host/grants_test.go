package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/testutil"
)

const grantsTOML = `
[servers.fixture]
command = "@FIXTURE@"

[policy]
require_grant = ["fixture__delete_*", "fixture__add"]

[tools.fixture__echo]
grant = "required"

[tools.fixture__sleep]
grant = "ask"
ask_timeout = "300ms"

[profiles.review]

[serve.clients.alice]
token = "alice-token-0123456789"

[serve.clients.bob]
token = "bob-token-0123456789ab"
`

// grantRecorder keeps a Host's audit records.
type grantRecorder struct {
	mu   sync.Mutex
	recs []host.AuditRecord
}

func (r *grantRecorder) add(rec host.AuditRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

// ops returns the records of op (all, for "*").
func (r *grantRecorder) ops(op string) []host.AuditRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []host.AuditRecord
	for _, rec := range r.recs {
		if op == "*" || rec.Op == op {
			out = append(out, rec)
		}
	}
	return out
}

// grantHost starts the fixture under grantsTOML with an in-memory store,
// its audit records kept, and elicit (may be nil) as Options.Elicit.
func grantHost(t *testing.T, elicit func(context.Context, *host.ElicitationRequest) (*mcp.ElicitResult, error)) (*host.Host, *grantRecorder, *store.DB) {
	t.Helper()
	db, err := store.Open(context.Background(), "sqlite::memory:", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rec := &grantRecorder{}
	h, _ := policyHost(t, grantsTOML, &host.Options{Store: db, Audit: rec.add, Elicit: elicit})
	return h, rec, db
}

var echoArgs = map[string]any{"text": "hi"}

func wantGrantRequired(t *testing.T, res *mcp.CallToolResult, err error, hint string) {
	t.Helper()
	var ge *host.GrantRequiredError
	if !errors.Is(err, host.ErrGrantRequired) || !errors.As(err, &ge) {
		t.Fatalf("want ErrGrantRequired, got %v (result %v)", err, res)
	}
	if host.ErrorKind(err) != host.KindGrantRequired || host.HTTPStatus(host.ErrorKind(err)) != 403 {
		t.Fatalf("kind %s", host.ErrorKind(err))
	}
	if !strings.Contains(err.Error(), hint) {
		t.Fatalf("error %q does not say %q", err, hint)
	}
	// What the model reads over MCP.
	r := host.ErrorResult(err)
	if !r.IsError || host.ResultKind(r) != host.KindGrantRequired || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "needs a grant") {
		t.Fatalf("isError result %+v", r)
	}
}

func TestGrantRequiredRefusedThenAllowed(t *testing.T) {
	h, rec, _ := grantHost(t, nil)
	ctx := context.Background()
	aliceCtx := host.WithClient(ctx, "alice")
	// No client, no profile: nothing could be granted.
	res, err := h.CallTool(ctx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "neither a client nor a profile")
	res, err = h.CallTool(aliceCtx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant alice fixture__echo --ttl 15m")
	// require_grant globs.
	res, err = h.CallTool(aliceCtx, "fixture__add", map[string]any{"a": 1, "b": 2})
	wantGrantRequired(t, res, err, "toolhost grant alice fixture__add")
	// The refusal is audited: denied by rule grant.
	calls := rec.ops("")
	last := calls[len(calls)-1]
	if last.Outcome != host.OutcomeDenied || last.Decision != "deny" || last.Rule != "grant" || last.Client != "alice" {
		t.Fatalf("refusal audited as %+v", last)
	}
	// A tool that needs no grant is not touched.
	if _, err := h.CallTool(aliceCtx, "fixture__fail", map[string]any{}); err != nil {
		t.Fatalf("a tool without grant: %v", err)
	}

	g, err := h.CreateGrant(ctx, host.GrantRequest{Subject: "alice", Tool: "fixture__echo", TTL: time.Hour, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err := h.CallTool(aliceCtx, "fixture__echo", echoArgs); err != nil || res.IsError {
			t.Fatalf("with a grant: %v %v", res, err)
		}
	}
	// Another client's grant does not count, nor does it for no client.
	res, err = h.CallTool(host.WithClient(ctx, "bob"), "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant bob")
	// The grant's tool is what it names.
	res, err = h.CallTool(aliceCtx, "fixture__add", map[string]any{"a": 1, "b": 2})
	wantGrantRequired(t, res, err, "fixture__add")

	uses := rec.ops(host.OpGrantUse)
	creates := rec.ops(host.OpGrantCreate)
	if len(uses) != 3 || uses[0].Rule != "grant "+g.ID || uses[0].Client != "alice" || uses[0].Tool != "fixture__echo" {
		t.Fatalf("grant/use records %+v", uses)
	}
	if len(creates) != 1 || creates[0].Rule != "grant "+g.ID || !strings.Contains(string(creates[0].Args), `"subject":"alice"`) {
		t.Fatalf("grant/create records %+v", creates)
	}

	// Revoked: refused again, and audited.
	if _, err := h.RevokeGrant(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	res, err = h.CallTool(aliceCtx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant alice")
	if _, err := h.RevokeGrant(ctx, g.ID); !errors.Is(err, store.ErrNoGrant) {
		t.Fatalf("second revoke: %v", err)
	}
	if r := rec.ops(host.OpGrantRevoke); len(r) != 1 || r[0].Rule != "grant "+g.ID {
		t.Fatalf("grant/revoke records %+v", r)
	}
}

func TestGrantUsesAndProfiles(t *testing.T) {
	h, _, _ := grantHost(t, nil)
	ctx := context.Background()
	if _, err := h.CreateGrant(ctx, host.GrantRequest{Subject: "client:bob", Tool: "fixture__*", TTL: time.Hour, Uses: 2}); err != nil {
		t.Fatal(err)
	}
	bobCtx := host.WithClient(ctx, "bob")
	for i := range 2 {
		if _, err := h.CallTool(bobCtx, "fixture__echo", echoArgs); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
	}
	res, err := h.CallTool(bobCtx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant bob")

	// A profile's grant counts for calls in its view, whatever the client.
	review, err := h.Profile("review")
	if err != nil {
		t.Fatal(err)
	}
	res, err = review.CallTool(ctx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant profile:review fixture__echo")
	if _, err := h.CreateGrant(ctx, host.GrantRequest{Subject: "profile:review", Tool: "fixture__echo", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := review.CallTool(host.WithClient(ctx, "bob"), "fixture__echo", echoArgs); err != nil {
		t.Fatalf("profile grant: %v", err)
	}
	// ... and not outside it.
	res, err = h.CallTool(bobCtx, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant bob")
}

func TestGrantExpires(t *testing.T) {
	h, _, db := grantHost(t, nil)
	ctx := context.Background()
	g, err := h.CreateGrant(ctx, host.GrantRequest{Subject: "alice", Tool: "fixture__echo", TTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Expiry is the store's clock: wait until it has passed there.
	testutil.Eventually(t, 10*time.Second, func() bool {
		now, err := db.Now(ctx)
		return err == nil && now.After(g.Expires)
	})
	res, err := h.CallTool(host.WithClient(ctx, "alice"), "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "toolhost grant alice")
}

func TestGrantSubjects(t *testing.T) {
	h, _, _ := grantHost(t, nil)
	ctx := context.Background()
	for _, s := range []string{"'; DROP TABLE grants; --", "carol", "user:alice", "client:review", "profile:alice", ""} {
		_, err := h.CreateGrant(ctx, host.GrantRequest{Subject: s, Tool: "fixture__echo", TTL: time.Hour})
		if !errors.Is(err, host.ErrUnknownSubject) || (s != "" && !strings.Contains(err.Error(), "clients: alice, bob; profiles: review")) {
			t.Errorf("subject %q: %v", s, err)
		}
	}
	for _, tool := range []string{"'; DROP TABLE grants; --", "fixture/echo", "x__[", ""} {
		if _, err := h.CreateGrant(ctx, host.GrantRequest{Subject: "alice", Tool: tool, TTL: time.Hour}); !errors.Is(err, host.ErrBadGrant) {
			t.Errorf("tool %q: %v", tool, err)
		}
	}
	// A client named to break SQL (WithClient takes any string) is only a
	// name: refused, and the table is still there.
	evil := host.WithClient(ctx, "'; DROP TABLE grants; --")
	res, err := h.CallTool(evil, "fixture__echo", echoArgs)
	wantGrantRequired(t, res, err, "needs a grant")
	if _, err := h.Grants(ctx, true); err != nil {
		t.Fatalf("grants after a hostile client name: %v", err)
	}
}

// TestGrantStoreUnavailable: a store that cannot answer refuses the call
// (fail closed) with ErrStoreUnavailable, at once.
func TestGrantStoreUnavailable(t *testing.T) {
	h, _, db := grantHost(t, nil)
	db.Close()
	start := time.Now()
	_, err := h.CallTool(host.WithClient(context.Background(), "alice"), "fixture__echo", echoArgs)
	if !errors.Is(err, host.ErrStoreUnavailable) || host.ErrorKind(err) != host.KindStoreUnavailable {
		t.Fatalf("want ErrStoreUnavailable, got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the refusal took %s", d)
	}
	// A tool without grant still works.
	if _, err := h.CallTool(context.Background(), "fixture__fail", map[string]any{}); err != nil {
		t.Fatal(err)
	}
}

// TestGrantAsk: grant = "ask" asks the caller's user through
// Options.Elicit: once lets one call through, "for 15 minutes" grants the
// tool, anything else refuses it; each answer is audited.
func TestGrantAsk(t *testing.T) {
	var (
		mu      sync.Mutex
		answer  func() (*mcp.ElicitResult, error)
		asked   []*host.ElicitationRequest
		blocked = make(chan struct{})
	)
	elicit := func(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req)
		a := answer
		mu.Unlock()
		if a == nil {
			// No answer: wait for the deadline.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-blocked:
				return nil, errors.New("unblocked")
			}
		}
		return a()
	}
	h, rec, _ := grantHost(t, elicit)
	ctx := host.WithClient(context.Background(), "alice")
	set := func(f func() (*mcp.ElicitResult, error)) { mu.Lock(); answer = f; mu.Unlock() }
	choose := func(d string) func() (*mcp.ElicitResult, error) {
		return func() (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}, nil
		}
	}
	sleep := map[string]any{"ms": 1, "api_token": "s3cr3t"}

	set(choose("deny"))
	res, err := h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "the user denied it")
	set(func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil })
	res, err = h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "the user answered decline")
	set(choose("always"))
	res, err = h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "not one of the choices")
	set(func() (*mcp.ElicitResult, error) {
		return nil, errors.New("gateway: no client to relay the request to")
	})
	res, err = h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "could not be asked")
	set(nil)
	res, err = h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "no answer in time")

	mu.Lock()
	req := asked[0]
	mu.Unlock()
	if !req.Approval || req.Backend != "" || req.Call == nil || req.Call.Tool != "fixture__sleep" || req.Call.Client != "alice" ||
		!strings.Contains(req.Params.Message, "Allow fixture__sleep with these arguments?") || strings.Contains(req.Params.Message, "s3cr3t") {
		t.Fatalf("the question: %+v %+v", req, req.Params)
	}
	if denies := rec.ops(host.OpGrantDeny); len(denies) != 5 || denies[0].Outcome != host.OutcomeDenied || denies[0].Client != "alice" {
		t.Fatalf("grant/deny records %+v", denies)
	}

	// once: this call, and only it.
	// (The refusals came before validation; a call that runs has valid
	// arguments.)
	sleep = map[string]any{"ms": 1}
	set(choose("once"))
	if res, err := h.CallTool(ctx, "fixture__sleep", sleep); err != nil || res.IsError {
		t.Fatalf("approved once: %v %v", res, err)
	}
	set(choose("deny"))
	res, err = h.CallTool(ctx, "fixture__sleep", sleep)
	wantGrantRequired(t, res, err, "denied")

	// for 15 minutes: a grant; later calls are not asked.
	set(choose("for 15 minutes"))
	if _, err := h.CallTool(ctx, "fixture__sleep", sleep); err != nil {
		t.Fatal(err)
	}
	set(choose("deny"))
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	for range 2 {
		if _, err := h.CallTool(ctx, "fixture__sleep", sleep); err != nil {
			t.Fatalf("within the approved 15 minutes: %v", err)
		}
	}
	mu.Lock()
	if len(asked) != n {
		t.Fatalf("asked again within the approved window")
	}
	mu.Unlock()
	gs, err := h.Grants(context.Background(), false)
	if err != nil || len(gs) != 1 || gs[0].UsesLeft != nil || gs[0].Subject != "alice" || gs[0].Expires.Sub(gs[0].Created) != 15*time.Minute {
		t.Fatalf("the approval's grant: %+v %v", gs, err)
	}
	if a := rec.ops(host.OpGrantApprove); len(a) != 2 || a[0].Rule == "" || !strings.Contains(string(a[0].Args), `"answer":"once"`) {
		t.Fatalf("grant/approve records %+v", a)
	}
	close(blocked)
}

// TestGrantAskWithoutElicit: a Host that cannot ask refuses.
func TestGrantAskWithoutElicit(t *testing.T) {
	h, _, _ := grantHost(t, nil)
	res, err := h.CallTool(host.WithClient(context.Background(), "alice"), "fixture__sleep", map[string]any{"ms": 1})
	wantGrantRequired(t, res, err, "no one to ask")
}
