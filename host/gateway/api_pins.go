package gateway

import (
	"errors"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/host"
)

// Tool-definition pinning over the REST API (issue 25, item 6; host/pins.go):
// GET /api/v1/pins lists the pins, the quarantined tools and the
// tool-poisoning warnings; POST /api/v1/tools/{name}/approve (admin)
// approves the definition that waits.

// PinView is one tool's pin (GET /api/v1/pins). Times are RFC 3339 UTC;
// definitions are canonical JSON text (host.ToolDefinition).
type PinView struct {
	Tool              string     `json:"tool"`
	Backend           string     `json:"backend"`
	Hash              string     `json:"hash,omitempty"` // "" while never approved
	Definition        string     `json:"definition,omitempty"`
	ApprovedAt        *time.Time `json:"approved_at,omitempty"`
	ApprovedBy        string     `json:"approved_by,omitempty"`
	PendingHash       string     `json:"pending_hash,omitempty"`
	PendingDefinition string     `json:"pending_definition,omitempty"`
	PendingSince      *time.Time `json:"pending_since,omitempty"`
	// Quarantined: the tool is held back in this gateway now.
	Quarantined bool `json:"quarantined"`
	// Fields changed between the approved and the pending definition.
	Fields []string `json:"fields,omitempty"`
}

// PinList is the answer of GET /api/v1/pins.
type PinList struct {
	Pins        []PinView              `json:"pins"`
	Quarantined []host.QuarantinedTool `json:"quarantined"`
	// Warnings are the tool-poisoning warnings (host.Host.ToolWarnings).
	Warnings []string `json:"warnings"`
}

// PinApproval is the answer of POST /api/v1/tools/{name}/approve.
type PinApproval struct {
	Tool     string `json:"tool"`
	Approved bool   `json:"approved"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// listPins serves GET /api/v1/pins: 200 PinList, or 503
// store_unavailable.
func (g *Gateway) listPins(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	pins, err := g.h.Pins(r.Context())
	if err != nil {
		writeHostError(w, err)
		return
	}
	out := PinList{Pins: make([]PinView, 0, len(pins)), Quarantined: g.h.Quarantined(), Warnings: g.h.ToolWarnings()}
	if out.Quarantined == nil {
		out.Quarantined = []host.QuarantinedTool{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, p := range pins {
		out.Pins = append(out.Pins, PinView{Tool: p.Tool, Backend: p.Backend, Hash: p.Hash, Definition: p.Definition,
			ApprovedAt: timePtr(p.ApprovedAt), ApprovedBy: p.ApprovedBy, PendingHash: p.PendingHash,
			PendingDefinition: p.PendingDefinition, PendingSince: timePtr(p.PendingSince), Quarantined: p.Quarantined, Fields: p.Fields})
	}
	WriteJSON(w, http.StatusOK, out)
}

// approveTool serves POST /api/v1/tools/{name}/approve[?hash=HEX]: the
// definition of tool {name} that waits for approval (only the one whose
// hash is HEX, when given: the one reviewed) becomes its pin, approved by
// "api:CLIENT", and the tool is released (host.Host.ApproveTool; audited
// as admin/approve_tool). 200 PinApproval; 404 not_found when nothing (or
// another definition) waits; 503 store_unavailable.
func (g *Gateway) approveTool(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "hash") {
		return
	}
	name := r.PathValue("name")
	client := CallerFrom(r.Context()).Client
	ctx := host.WithClient(r.Context(), client)
	err := g.h.ApproveTool(ctx, name, r.URL.Query().Get("hash"), "api:"+client)
	switch {
	case errors.Is(err, host.ErrNothingToApprove):
		WriteError(w, http.StatusNotFound, kindNotFound, err.Error())
	case err != nil:
		writeHostError(w, err)
	default:
		WriteJSON(w, http.StatusOK, PinApproval{Tool: name, Approved: true})
	}
}
