package host

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// grantLayer refuses a call of a tool that needs a grant ([tools.NAME]
// grant = "required" or "ask", [policy] require_grant; config.GrantMode)
// when its caller has no live grant in the store: the caller's subjects
// are its client (WithClient) and its profile, and one use of a grant of
// either is spent (store.ConsumeGrant; audited OpGrantUse). Without one:
//
//   - grant = "required": a *GrantRequiredError (ErrGrantRequired), which
//     the model reads in an isError result; audited as refused (outcome
//     "denied", rule "grant");
//   - grant = "ask": the calling client's user is asked through
//     Options.Elicit (the gateway relays it to the client that made the
//     call; toolhost call asks on its terminal): "once" lets this call
//     through (a single-use grant, spent at once), "for 15 minutes" makes
//     a grant of 15 minutes, anything else (declined, cancelled, no answer
//     within [tools.NAME] ask_timeout or the call's deadline, a client
//     that cannot be asked, no Options.Elicit) is a *GrantRequiredError.
//     Both are audited (OpGrantApprove, OpGrantDeny).
//
// The store not answering within grantTimeout refuses the call with
// ErrStoreUnavailable (fail closed). A tool that needs no grant costs one
// map lookup.
func grantLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		cfg := h.config()
		mode := cfg.GrantMode(o.req.name)
		if mode == "" {
			return next(ctx, o)
		}
		if err := h.checkGrant(ctx, o, cfg, mode); err != nil {
			o.out.decided, o.out.decision = true, Decision{Rule: "grant"}
			return nil, err
		}
		return next(ctx, o)
	}
}

// Answers of an approval (the enum of its form).
const (
	approveOnce    = "once"
	approveFor15   = "for 15 minutes"
	approveDeny    = "deny"
	approvalWindow = 15 * time.Minute
)

// checkGrant returns nil when the call o may go on: it spent a live grant
// of its caller, or (mode ask) its caller's user approved it.
func (h *Host) checkGrant(ctx context.Context, o *op, cfg *config.Config, mode string) error {
	ci := &CallInfo{Tool: o.req.name, Profile: o.req.profile, Client: clientOf(ctx)}
	var subjects []store.Subject
	if ci.Client != "" {
		subjects = append(subjects, store.Subject{Kind: store.SubjectClient, Name: ci.Client})
	}
	if ci.Profile != "" {
		subjects = append(subjects, store.Subject{Kind: store.SubjectProfile, Name: ci.Profile})
	}
	refusal := &GrantRequiredError{Tool: ci.Tool, Client: ci.Client, Profile: ci.Profile}
	if len(subjects) > 0 {
		id, err := h.spendGrant(ctx, subjects, ci.Tool)
		if err != nil {
			return fmt.Errorf("%w: a grant of %s could not be checked: %w", ErrStoreUnavailable, ci.Tool, err)
		}
		if id != "" {
			h.auditGrantCall(ctx, OpGrantUse, ci, &store.Grant{ID: id, Tool: ci.Tool}, "", "")
			return nil
		}
	}
	if mode != config.GrantAsk {
		return refusal
	}
	answer, reason := h.askApproval(ctx, o, cfg, ci, len(subjects) > 0)
	switch answer {
	case approveOnce, approveFor15:
	default:
		refusal.Reason = reason
		h.auditGrantCall(ctx, OpGrantDeny, ci, nil, answer, reason)
		return refusal
	}
	if len(subjects) == 0 {
		// Nothing a grant could name (toolhost call without a profile):
		// the approval lets this one call through.
		h.auditGrantCall(ctx, OpGrantApprove, ci, nil, answer, "")
		return nil
	}
	r := store.NewGrant{SubjectKind: subjects[0].Kind, Subject: subjects[0].Name, Tool: ci.Tool, TTL: approvalWindow, CreatedBy: "approval", Reason: "approved by the user of " + grantSubjectArg(ci.Client, ci.Profile)}
	if answer == approveOnce {
		r.Uses = 1
	}
	db, err := h.grantStore(ctx)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	g, err := db.CreateGrant(sctx, r)
	if err != nil {
		return fmt.Errorf("%w: the approval of %s could not be stored: %w", ErrStoreUnavailable, ci.Tool, err)
	}
	h.auditGrantCall(ctx, OpGrantApprove, ci, g, answer, "")
	if answer == approveOnce {
		// Spend it now (another call may have been approved meanwhile:
		// any live grant will do).
		id, err := db.ConsumeGrant(sctx, subjects[:1], ci.Tool)
		switch {
		case err != nil:
			return fmt.Errorf("%w: a grant of %s could not be spent: %w", ErrStoreUnavailable, ci.Tool, err)
		case id == "":
			refusal.Reason = "the approved grant was spent by another call"
			return refusal
		}
		g.ID = id
	}
	h.auditGrantCall(ctx, OpGrantUse, ci, g, "", "")
	return nil
}

// spendGrant spends a live grant of subjects for tool (its id, "" for
// none) within grantTimeout.
func (h *Host) spendGrant(ctx context.Context, subjects []store.Subject, tool string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	db, err := h.db(ctx)
	if err != nil {
		return "", err
	}
	return db.ConsumeGrant(ctx, subjects, tool)
}

// askApproval asks the caller's user whether call ci may run (an MCP
// elicitation with a form of one enum field), within [tools.NAME]
// ask_timeout and the call's deadline, and returns the answer (one of the
// enum, or "" when there is none) and, when it is not an approval, why.
// canGrant offers "for 15 minutes" (there is a client or profile to grant
// it to).
func (h *Host) askApproval(ctx context.Context, o *op, cfg *config.Config, ci *CallInfo, canGrant bool) (answer, reason string) {
	elicit := h.opts.Elicit
	if elicit == nil {
		return "", "no one to ask: the host has no elicitation handler"
	}
	actx, cancel := o.dst.b.bound(ctx, o.req.start)
	defer cancel()
	if t := cfg.Tools[ci.Tool]; t != nil && t.AskTimeout > 0 {
		var cancel2 context.CancelFunc
		actx, cancel2 = context.WithTimeout(actx, t.AskTimeout.Std())
		defer cancel2()
	}
	choices := []any{approveOnce, approveFor15, approveDeny}
	if !canGrant {
		choices = []any{approveOnce, approveDeny}
	}
	msg := "Allow " + ci.Tool + " with these arguments?"
	if v, err := o.req.args.value(); err == nil {
		_, redacted := canonicalArgs(v, h.audit, 256)
		if len(redacted) > 2048 {
			redacted = append(redacted[:2048:2048], "…"...)
		}
		msg += " " + string(redacted)
	}
	params := &mcp.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":        "string",
					"title":       "Allow " + ci.Tool + "?",
					"description": "once: this call only; for 15 minutes: this and later calls of the tool; deny: refuse it",
					"enum":        choices,
				},
			},
			"required": []any{"decision"},
		},
	}
	res, err := elicit(actx, &ElicitationRequest{Approval: true, Call: ci, Params: params})
	switch {
	case err != nil && actx.Err() != nil:
		return "", fmt.Sprintf("no answer in time (%v)", context.Cause(actx))
	case err != nil:
		return "", "the client could not be asked: " + err.Error()
	case res == nil:
		return "", "no answer"
	case res.Action != "accept":
		return "", "the user answered " + res.Action
	}
	d, _ := res.Content["decision"].(string)
	for _, c := range choices {
		if d == c && d != approveDeny {
			return d, ""
		}
	}
	if d == approveDeny {
		return d, "the user denied it"
	}
	return d, fmt.Sprintf("the answer %q is not one of the choices", grantTruncate(d, 64))
}

// grantTruncate returns s cut to at most n bytes.
func grantTruncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
