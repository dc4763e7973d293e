package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

// The grants API (issue 25, item 3), admin only, each write audited by the
// host (grant/create, grant/revoke) with the admin client's name:
//
//	POST   /api/v1/grants       GrantRequest → 201 store.Grant
//	GET    /api/v1/grants[?all=true]        → 200 GrantList (live grants; all: every one)
//	DELETE /api/v1/grants/{id}              → 200 store.Grant (revoked)
//
// Errors: 400 bad_request (a body that is not a GrantRequest, an unknown
// subject, a bad tool, ttl or uses), 404 not_found (DELETE of no such
// grant, or one revoked already), 503 store_unavailable.

// GrantRequest is the body of POST /api/v1/grants (as toolhost grant's
// arguments).
type GrantRequest struct {
	// Subject: a [serve.clients.NAME] or [profiles.NAME]; "client:NAME" or
	// "profile:NAME" when a name is both.
	Subject string `json:"subject"`
	// Tool: a catalogue name or a glob of them.
	Tool string `json:"tool"`
	// TTL: a duration, "15m", "8h", "7d" (at most a year).
	TTL string `json:"ttl"`
	// Uses: how many calls it allows; 0 or absent: any number.
	Uses   int    `json:"uses,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// GrantList is the body of GET /api/v1/grants.
type GrantList struct {
	Grants []*store.Grant `json:"grants"`
}

func (g *Gateway) createGrant(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	var req GrantRequest
	if !decodeBody(w, r, &req, `a grant request ({"subject", "tool", "ttl", "uses", "reason"})`) {
		return
	}
	var ttl config.Duration
	if err := ttl.UnmarshalText([]byte(req.TTL)); err != nil || ttl <= 0 {
		badRequest(w, "ttl %q is not a positive duration (like \"15m\", \"8h\", \"7d\")", grantClip(req.TTL))
		return
	}
	ctx := host.WithClient(r.Context(), CallerFrom(r.Context()).Client)
	gr, err := g.h.CreateGrant(ctx, host.GrantRequest{Subject: req.Subject, Tool: req.Tool, TTL: ttl.Std(), Uses: req.Uses, Reason: req.Reason, CreatedBy: "api:" + CallerFrom(r.Context()).Client})
	if err != nil {
		writeGrantError(w, err)
		return
	}
	WriteJSON(w, http.StatusCreated, gr)
}

func (g *Gateway) listGrants(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "all") {
		return
	}
	all := false
	switch v := r.URL.Query().Get("all"); v {
	case "", "false":
	case "true":
		all = true
	default:
		badRequest(w, "all=%q: write all=true or leave it out", grantClip(v))
		return
	}
	gs, err := g.h.Grants(r.Context(), all)
	if err != nil {
		writeGrantError(w, err)
		return
	}
	if gs == nil {
		gs = []*store.Grant{}
	}
	WriteJSON(w, http.StatusOK, GrantList{Grants: gs})
}

func (g *Gateway) revokeGrant(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	ctx := host.WithClient(r.Context(), CallerFrom(r.Context()).Client)
	gr, err := g.h.RevokeGrant(ctx, r.PathValue("id"))
	if err != nil {
		writeGrantError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, gr)
}

// writeGrantError answers a grant operation's error.
func writeGrantError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNoGrant):
		WriteError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, host.ErrUnknownSubject), errors.Is(err, store.ErrBadGrant):
		badRequest(w, "%s", err.Error())
	default:
		writeHostError(w, err)
	}
}

// grantClip bounds a value echoed in an error.
func grantClip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
