package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// Grants and approval (issue 25, item 3). A tool whose [tools.NAME] grant
// is "required" or "ask", or that [policy] require_grant matches, is called
// only under a live grant of the caller's client (WithClient) or profile:
// a row of the store's grants table (host/store) made by an operator
// (toolhost grant, POST /api/v1/grants, Host.CreateGrant) or by the
// caller's user approving the call (grant = "ask"). The grant layer
// (layer_grant.go) checks it; this file has the Host's API.

// Audit operations (AuditRecord.Op) of grants. Each record's Rule is
// "grant ID" (the grant it is about; a denial has none), and Args the
// grant's fields ({"id", "subject_kind", "subject", "tool", "expires",
// "uses", "reason"}) or, for an approval or a denial, the user's answer.
const (
	OpGrantCreate  = "grant/create"  // an operator made a grant
	OpGrantRevoke  = "grant/revoke"  // an operator revoked one
	OpGrantUse     = "grant/use"     // a call spent a grant (Tool, Client, Profile: the call's)
	OpGrantApprove = "grant/approve" // the caller's user approved a call of a grant = "ask" tool
	OpGrantDeny    = "grant/deny"    // ... declined it, cancelled, did not answer in time, or could not be asked
)

// GrantRequiredError is the error of a call refused for want of a grant;
// it wraps ErrGrantRequired. Its text is what the model reads in the
// isError result: it names the tool and the command that grants it.
type GrantRequiredError struct {
	Tool    string // catalogue name
	Client  string // the caller's client ("" without WithClient)
	Profile string // the caller's profile ("" for the Host's own view)
	// Reason says why an approval (grant = "ask") did not let the call
	// through: "declined", "no answer within 30s", ...; "" for a tool
	// with grant = "required".
	Reason string
}

func (e *GrantRequiredError) Error() string {
	var b strings.Builder
	b.WriteString(e.Tool)
	b.WriteString(" needs a grant")
	if e.Reason != "" {
		b.WriteString(" (approval: ")
		b.WriteString(e.Reason)
		b.WriteString(")")
	}
	switch subject := grantSubjectArg(e.Client, e.Profile); {
	case subject == "":
		b.WriteString(", and this call has neither a client nor a profile a grant could name: call it as a [serve.clients] client or through a [profiles] profile")
	default:
		fmt.Fprintf(&b, ": ask the operator to run `toolhost grant %s %s --ttl 15m`", subject, e.Tool)
	}
	return b.String()
}

func (e *GrantRequiredError) Unwrap() error { return ErrGrantRequired }

// grantSubjectArg is how `toolhost grant` names the subject of a call of
// client and profile: the client, else "profile:NAME".
func grantSubjectArg(client, profile string) string {
	switch {
	case client != "":
		return client
	case profile != "":
		return "profile:" + profile
	}
	return ""
}

// ErrUnknownSubject: a grant names a subject that is neither a
// [serve.clients.NAME] nor a [profiles.NAME] of the configuration, or
// names that are both without "client:" or "profile:" to say which.
var ErrUnknownSubject = errors.New("unknown grant subject")

// GrantSubject resolves the subject of a grant as `toolhost grant` and
// the REST API take it: "client:NAME", "profile:NAME", or a bare NAME that
// is a [serve.clients.NAME] or a [profiles.NAME] of cfg (but not both).
// Errors wrap ErrUnknownSubject and list the names there are.
func GrantSubject(cfg *config.Config, s string) (store.Subject, error) {
	clients, profiles := slices.Sorted(maps.Keys(cfg.Serve.Clients)), slices.Sorted(maps.Keys(cfg.Profiles))
	list := func() string {
		var b strings.Builder
		b.WriteString("clients: ")
		if len(clients) == 0 {
			b.WriteString("(none)")
		}
		b.WriteString(strings.Join(clients, ", "))
		b.WriteString("; profiles: ")
		if len(profiles) == 0 {
			b.WriteString("(none)")
		}
		b.WriteString(strings.Join(profiles, ", "))
		return b.String()
	}
	kind, name, qualified := strings.Cut(s, ":")
	if !qualified {
		kind, name = "", s
	}
	isClient, isProfile := slices.Contains(clients, name), slices.Contains(profiles, name)
	switch {
	case kind == store.SubjectClient && isClient, kind == "" && isClient && !isProfile:
		return store.Subject{Kind: store.SubjectClient, Name: name}, nil
	case kind == store.SubjectProfile && isProfile, kind == "" && isProfile && !isClient:
		return store.Subject{Kind: store.SubjectProfile, Name: name}, nil
	case kind == "" && isClient && isProfile:
		return store.Subject{}, fmt.Errorf("%w: %q is both a client and a profile: write client:%s or profile:%s", ErrUnknownSubject, name, name, name)
	case qualified && kind != store.SubjectClient && kind != store.SubjectProfile:
		return store.Subject{}, fmt.Errorf("%w: %q: write NAME, client:NAME or profile:NAME (%s)", ErrUnknownSubject, s, list())
	}
	return store.Subject{}, fmt.Errorf("%w: %q is not a [serve.clients] or [profiles] name of the configuration (%s)", ErrUnknownSubject, s, list())
}

// GrantRequest is what Host.CreateGrant grants.
type GrantRequest struct {
	// Subject is the client or profile, as GrantSubject resolves it.
	Subject string
	// Tool is a catalogue name, or a glob of them (as [policy] allow).
	Tool string
	// TTL is how long it lasts from now (the store's clock); required.
	TTL time.Duration
	// Uses is how many calls it allows; 0: any number until it expires.
	Uses int
	// Reason is kept with it (at most store.MaxGrantReason bytes).
	Reason string
	// CreatedBy names who made it; default the client in ctx
	// (WithClient), else "operator".
	CreatedBy string
}

// ErrBadGrant: a GrantRequest the host cannot make: a tool that is not a
// catalogue name or glob, a TTL out of range, and the like (the error
// says which). It wraps store.ErrBadGrant.
var ErrBadGrant = store.ErrBadGrant

// grantTimeout bounds every store access of a grant (the layer's question
// on a call's path, the API's writes).
const grantTimeout = 3 * time.Second

// CreateGrant grants r.Subject the calls of r.Tool for r.TTL (r.Uses
// times, or any number) in the host's store, audits it (OpGrantCreate)
// and returns it. Errors: ErrUnknownSubject, ErrBadGrant,
// ErrStoreUnavailable.
func (h *Host) CreateGrant(ctx context.Context, r GrantRequest) (*store.Grant, error) {
	subject, err := GrantSubject(h.config(), r.Subject)
	if err != nil {
		return nil, err
	}
	if _, err := config.CompileRule("tool", 0, r.Tool); err != nil || strings.Trim(r.Tool, grantGlobChars) != "" {
		return nil, fmt.Errorf("%w: tool %q is not a catalogue name (backend__tool) or a glob of them", ErrBadGrant, r.Tool)
	}
	if r.CreatedBy == "" {
		r.CreatedBy = clientOf(ctx)
	}
	if r.CreatedBy == "" {
		r.CreatedBy = "operator"
	}
	db, err := h.grantStore(ctx)
	if err != nil {
		return nil, err
	}
	ctx2, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	g, err := db.CreateGrant(ctx2, store.NewGrant{SubjectKind: subject.Kind, Subject: subject.Name, Tool: r.Tool, TTL: r.TTL, Uses: r.Uses, CreatedBy: r.CreatedBy, Reason: r.Reason})
	if err != nil {
		return nil, storeErr(err)
	}
	h.auditGrant(ctx, OpGrantCreate, g, "", "")
	return g, nil
}

// grantGlobChars are those of config's catalogue globs.
const grantGlobChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-*?[]{},!\\"

// Grants returns the live grants of the host's store (all: every grant
// ever made), newest first. Errors: ErrStoreUnavailable.
func (h *Host) Grants(ctx context.Context, all bool) ([]*store.Grant, error) {
	db, err := h.grantStore(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	gs, err := db.ListGrants(ctx, all)
	if err != nil {
		return nil, storeErr(err)
	}
	return gs, nil
}

// RevokeGrant revokes the grant id, audits it (OpGrantRevoke) and returns
// it. Errors: store.ErrNoGrant (no such grant, or revoked already),
// ErrStoreUnavailable.
func (h *Host) RevokeGrant(ctx context.Context, id string) (*store.Grant, error) {
	db, err := h.grantStore(ctx)
	if err != nil {
		return nil, err
	}
	ctx2, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	g, err := db.RevokeGrant(ctx2, id)
	if err != nil {
		return nil, storeErr(err)
	}
	h.auditGrant(ctx, OpGrantRevoke, g, "", "")
	return g, nil
}

// grantStore returns the host's store, opened within grantTimeout.
func (h *Host) grantStore(ctx context.Context) (*store.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	return h.db(ctx)
}

// storeErr returns err as the host returns it: a grant the store refuses
// or cannot find as it is, anything else (the database unreachable, a
// timeout) wrapped in ErrStoreUnavailable.
func storeErr(err error) error {
	if errors.Is(err, store.ErrBadGrant) || errors.Is(err, store.ErrNoGrant) || errors.Is(err, ErrStoreUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
}

// auditGrant writes the audit record of a grant operation: g the grant it
// is about (nil for a denial), answer the user's (an approval or a
// denial), reason why a denial was one.
func (h *Host) auditGrant(ctx context.Context, op string, g *store.Grant, answer, reason string) {
	h.auditGrantCall(ctx, op, nil, g, answer, reason)
}

// auditGrantCall is auditGrant for an operation made for a call (its
// tool, client and profile name the record).
func (h *Host) auditGrantCall(ctx context.Context, op string, ci *CallInfo, g *store.Grant, answer, reason string) {
	if !h.audit.enabled() {
		return
	}
	rec := &AuditRecord{Time: time.Now().UTC(), Op: op, Client: clientOf(ctx), Decision: "allow", Outcome: OutcomeOK}
	if ci != nil {
		rec.Tool, rec.Client, rec.Profile = ci.Tool, ci.Client, ci.Profile
	}
	args := map[string]any{}
	if g != nil {
		rec.Rule = "grant " + g.ID
		if ci == nil {
			rec.Tool = g.Tool
		}
		args["id"], args["subject_kind"], args["subject"], args["tool"] = g.ID, g.SubjectKind, g.Subject, g.Tool
		args["expires"] = g.Expires.Format(time.RFC3339Nano)
		if g.UsesLeft != nil {
			args["uses_left"] = json.Number(fmt.Sprint(*g.UsesLeft))
		}
		if g.Reason != "" {
			args["reason"] = g.Reason
		}
	}
	if answer != "" {
		args["answer"] = answer
	}
	if op == OpGrantDeny {
		rec.Decision, rec.Rule, rec.Outcome, rec.Error = "deny", "grant", OutcomeDenied, reason
	}
	canonical, redacted := canonicalArgs(args, h.audit, 256)
	rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
	h.audit.write(rec)
}
