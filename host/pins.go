package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// Tool-definition pinning (issue 25, item 6): "rug-pull" protection. With
// [host] pin (or a backend's pin) set to "trust-first" or "approve", the
// definition of each of the backend's tools (ToolDefinition: its name,
// title, description, input and output schema and annotations, as
// canonical JSON, hashed with SHA-256) is compared with the one approved
// and kept in the store (table tool_pins). A tool whose definition differs
// from its pin, or (pin = "approve") was never approved, is quarantined:
// left out of Tools and every view's list (an EventCatalogue tells the
// gateway, whose clients get notifications/tools/list_changed), its calls
// refused by the pin layer with a *ToolChangedError (ErrToolChanged),
// audited as denied by rule "pin", until an operator approves it
// (toolhost approve, POST /api/v1/tools/{name}/approve, Host.ApproveTool).
//
// The pins are cached in memory: read from the store when the catalogue is
// first built (and after a configuration change), written when a tool is
// first pinned or changes, and read again every PinRefreshInterval (and by
// RefreshPins), so that approvals made by another process (the CLI, a
// replica) release the tool in a running host.

// PinRefreshInterval is how often a host with pinning on reads the pins
// again from the store (approvals made elsewhere). Tests may lower it.
var PinRefreshInterval = 5 * time.Second

// pinStoreBound bounds the store accesses of one check of the catalogue
// against the pins (the catalogue's build never waits longer on the store).
const pinStoreBound = 5 * time.Second

// PinRule is the Decision.Rule (and audit rule) of a call refused because
// its tool is quarantined.
const PinRule = "pin"

// ErrNothingToApprove: Host.ApproveTool found no definition of the tool
// waiting for approval (or not the one named by its hash).
var ErrNothingToApprove = errors.New("no definition of the tool waits for approval")

// ToolChangedError is the error of a call of a quarantined tool. It wraps
// ErrToolChanged (kind tool_changed, HTTP 409). Its text fits a person and
// a model; the caller prefixes the tool's name.
type ToolChangedError struct {
	// Tool is the catalogue name.
	Tool string
	// Fields are the fields of the definition that differ from the approved
	// one (of "name", "title", "description", "inputSchema",
	// "outputSchema", "annotations"); empty when it was never approved.
	Fields []string
	// Unapproved: the tool has no approved definition yet (pin =
	// "approve", or its first pin is waiting).
	Unapproved bool
}

func (e *ToolChangedError) Error() string {
	if e.Unapproved || len(e.Fields) == 0 {
		return fmt.Sprintf("its definition has not been approved; an operator must review it and run `toolhost approve %s`", e.Tool)
	}
	return fmt.Sprintf("its %s changed since it was approved; an operator must review and run `toolhost approve %s`", joinAnd(e.Fields), e.Tool)
}

func (e *ToolChangedError) Unwrap() error { return ErrToolChanged }

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// QuarantinedTool is a tool held back by pinning (Host.Quarantined).
type QuarantinedTool struct {
	Name    string `json:"name"` // catalogue name
	Backend string `json:"backend"`
	// Fields changed since the approved definition (ToolChangedError).
	Fields []string `json:"fields,omitempty"`
	// Unapproved: never approved (pin = "approve").
	Unapproved bool `json:"unapproved,omitempty"`
	// Unverified: the pins could not be read from the store; the tool is
	// held until they can (Reason says why).
	Unverified bool   `json:"unverified,omitempty"`
	Reason     string `json:"reason"`
}

// quarantine is why one tool is held back.
type quarantine struct {
	backend     string
	fields      []string
	unapproved  bool
	unverified  bool
	pendingHash string
}

// err returns the error a call of the quarantined tool name gets.
func (q *quarantine) err(name string) error {
	if q.unverified {
		return fmt.Errorf("%w: its pinned definition could not be read from the store, so it is held until the store answers", ErrStoreUnavailable)
	}
	return &ToolChangedError{Tool: name, Fields: q.fields, Unapproved: q.unapproved}
}

// pinState is the host's cache of the store's pins.
type pinState struct {
	mu     sync.Mutex // taken inside rebuildMu
	loaded bool
	cfg    *config.Config // the configuration the pins were read under
	pins   map[string]store.Pin
	// logged: the quarantine already logged per tool (its pending hash).
	logged  map[string]string
	refresh sync.Once
	// poison: the poisoning warnings of the catalogue (poison.go); seen
	// those already logged.
	poison     []string
	poisonSeen map[string]bool
}

// ToolDefinition returns the definition of backend tool t (own is its name
// on the backend) that pinning compares: {name, title, description,
// inputSchema, outputSchema, annotations} (empty ones left out) as
// canonical JSON (object keys sorted at every level, no insignificant
// space, numbers as written, <, > and & unescaped), and the hex SHA-256 of
// it.
func ToolDefinition(own string, t *mcp.Tool) (canonical []byte, hash string) {
	m := map[string]any{"name": own}
	if t.Title != "" {
		m["title"] = t.Title
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	if t.InputSchema != nil {
		m["inputSchema"] = t.InputSchema
	}
	if t.OutputSchema != nil {
		m["outputSchema"] = t.OutputSchema
	}
	if t.Annotations != nil {
		m["annotations"] = t.Annotations
	}
	canonical = canonicalJSON(m)
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:])
}

// canonicalJSON encodes v, decodes it again (numbers kept as written) and
// encodes that: Go encodes maps with sorted keys.
func canonicalJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf("%q", "unencodable: "+err.Error()))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var generic any
	if err := d.Decode(&generic); err != nil {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return raw
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// DefinitionFields are the fields of a tool definition, in the order
// differences are named.
var DefinitionFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// ChangedFields returns the fields (of DefinitionFields) in which two
// canonical definitions differ; an old one that is not JSON differs in
// every field the new one has.
func ChangedFields(old, new []byte) []string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(new, &b)
	var out []string
	for _, f := range DefinitionFields {
		if !bytes.Equal(a[f], b[f]) {
			out = append(out, f)
		}
	}
	return out
}

// quarantined reports whether the catalogue tool name is quarantined.
func (h *Host) quarantined(name string) bool {
	q := h.quarantine.Load()
	if q == nil {
		return false
	}
	_, ok := (*q)[name]
	return ok
}

// Quarantined lists the tools held back by pinning, sorted by name.
func (h *Host) Quarantined() []QuarantinedTool {
	q := h.quarantine.Load()
	if q == nil {
		return nil
	}
	out := make([]QuarantinedTool, 0, len(*q))
	for _, name := range slices.Sorted(maps.Keys(*q)) {
		e := (*q)[name]
		out = append(out, QuarantinedTool{Name: name, Backend: e.backend, Fields: e.fields, Unapproved: e.unapproved, Unverified: e.unverified,
			Reason: e.err(name).Error()})
	}
	return out
}

// pinCheck checks the catalogue being built (tools) against the pins and
// returns the tools to quarantine (nil for none, and at once when no
// backend is pinned: nothing is read or computed). reload reads the pins
// from the store first (they are read anyway the first time and after a
// configuration change). It writes what it learns: a first pin
// (trust-first), a definition waiting for approval, one that waits no
// more. Every store access is bounded (pinStoreBound in all); a store that
// does not answer leaves the cache as it was (the tools of pinned backends
// are held as unverified while no pins were ever read). The caller holds
// rebuildMu.
func (h *Host) pinCheck(tools map[string]entry, reload bool) map[string]*quarantine {
	cfg := h.config()
	if !cfg.PinsOn() {
		return nil
	}
	h.startPinRefresh()
	ps := &h.pins
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ctx, cancel := context.WithTimeout(h.ctx, pinStoreBound)
	defer cancel()
	db, dbErr := h.db(ctx)
	if reload || !ps.loaded || ps.cfg != cfg {
		h.loadPins(ctx, db, dbErr, cfg)
	}
	q := map[string]*quarantine{}
	reloaded := false
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		e := tools[name]
		mode := cfg.PinOf(e.b.name)
		if mode == config.PinOff {
			continue
		}
		if !ps.loaded {
			q[name] = &quarantine{backend: e.b.name, unverified: true}
			continue
		}
		canon, hash := ToolDefinition(e.name, e.tool)
		p, ok := ps.pins[name]
		if !ok && mode == config.PinTrustFirst {
			wrote, err := false, dbErr
			if db != nil {
				wrote, err = db.PinFirst(ctx, name, e.b.name, hash, string(canon), config.PinTrustFirst)
			}
			if err == nil && !wrote && !reloaded {
				// Pinned meanwhile by another process: read what it pinned.
				reloaded = true
				h.loadPins(ctx, db, nil, cfg)
				p, ok = ps.pins[name]
			}
			if !ok {
				if err != nil {
					// Trusted in memory; written at a later check (the next
					// refresh reads the store again and finds no pin).
					h.logger.Warn("tool pinned in memory only: the store did not take its pin", "tool", name, "error", err)
				} else {
					h.logger.Info("tool definition pinned on first sight", "tool", name, "hash", hash[:12])
				}
				ps.pins[name] = store.Pin{Tool: name, Backend: e.b.name, Hash: hash, Definition: string(canon), ApprovedBy: config.PinTrustFirst, ApprovedAt: time.Now().UTC()}
				continue
			}
		}
		switch {
		case ok && p.Hash == hash:
			if p.Pending() && db != nil {
				// Back to the approved definition: nothing waits.
				if err := db.ClearPending(ctx, name, hash); err == nil {
					p.PendingHash, p.PendingDefinition, p.PendingSince = "", "", time.Time{}
					ps.pins[name] = p
				}
			}
			continue
		case !ok || p.PendingHash != hash:
			err := dbErr
			if db != nil {
				err = db.SetPending(ctx, name, e.b.name, hash, string(canon))
			}
			if err != nil {
				h.logger.Warn("tool quarantined, but the store did not take its pending definition", "tool", name, "error", err)
			} else {
				if !ok {
					p = store.Pin{Tool: name, Backend: e.b.name}
				}
				p.PendingHash, p.PendingDefinition, p.PendingSince = hash, string(canon), time.Now().UTC()
				ps.pins[name] = p
			}
		}
		qe := &quarantine{backend: e.b.name, pendingHash: hash, unapproved: !p.Approved()}
		if p.Approved() {
			qe.fields = ChangedFields([]byte(p.Definition), canon)
		}
		q[name] = qe
	}
	h.logQuarantine(q)
	if len(q) == 0 {
		return nil
	}
	return q
}

// loadPins reads every pin into the cache (ps.mu held). A failure keeps
// the cache (and is logged).
func (h *Host) loadPins(ctx context.Context, db *store.DB, dbErr error, cfg *config.Config) {
	ps := &h.pins
	err := dbErr
	var list []store.Pin
	if err == nil {
		list, err = db.Pins(ctx)
	}
	if err != nil {
		h.logger.Warn("tool pins could not be read from the store; pinned tools are checked against the pins read before (held if none were)", "error", err)
		return
	}
	m := make(map[string]store.Pin, len(list))
	for _, p := range list {
		m[p.Tool] = p
	}
	ps.pins, ps.loaded, ps.cfg = m, true, cfg
}

// logQuarantine logs each tool entering quarantine (once per pending
// definition) and leaving it (ps.mu held).
func (h *Host) logQuarantine(q map[string]*quarantine) {
	ps := &h.pins
	if ps.logged == nil {
		ps.logged = map[string]string{}
	}
	for name, e := range q {
		key := e.pendingHash
		if e.unverified {
			key = "unverified"
		}
		if ps.logged[name] == key {
			continue
		}
		ps.logged[name] = key
		h.logger.Warn("tool quarantined: its definition is not the approved one", "tool", name, "backend", e.backend,
			"reason", e.err(name).Error())
	}
	for name := range ps.logged {
		if _, ok := q[name]; !ok {
			delete(ps.logged, name)
			h.logger.Info("tool released from quarantine", "tool", name)
		}
	}
}

// startPinRefresh starts the goroutine that reads the pins again every
// PinRefreshInterval (once, and never on a closing Host).
func (h *Host) startPinRefresh() {
	select {
	case <-h.stop:
		return
	default:
	}
	h.pins.refresh.Do(func() {
		h.every(PinRefreshInterval, func() {
			if err := h.RefreshPins(h.ctx); err != nil && !errors.Is(err, ErrClosed) {
				h.logger.Debug("pin refresh", "error", err)
			}
		})
	})
}

// RefreshPins reads the pins again from the store and checks the catalogue
// against them: a tool approved elsewhere (toolhost approve, another
// replica) is released, one whose pin was changed is quarantined; an
// EventCatalogue names the tools that entered (Removed) or left (Added)
// quarantine. A running host does it every PinRefreshInterval. Errors:
// ErrClosed.
func (h *Host) RefreshPins(ctx context.Context) error {
	h.rebuildMu.Lock()
	defer h.rebuildMu.Unlock()
	h.mu.RLock()
	closed, tools := h.closed, h.tools
	h.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if !h.config().PinsOn() {
		return nil
	}
	before := h.visibleNames()
	h.setQuarantine(h.pinCheck(tools, true))
	after := h.visibleNames()
	added, removed := diffSorted(before, after), diffSorted(after, before)
	if len(added)+len(removed) > 0 {
		h.emit(Event{Kind: EventCatalogue, Added: added, Removed: removed})
	}
	return nil
}

// setQuarantine makes q the quarantined tools (nil: none).
func (h *Host) setQuarantine(q map[string]*quarantine) {
	if q == nil {
		h.quarantine.Store(nil)
		return
	}
	h.quarantine.Store(&q)
}

// PinInfo is one tool's pin as Host.Pins reports it.
type PinInfo struct {
	store.Pin
	// Quarantined: the tool is held back now (QuarantinedTool).
	Quarantined bool `json:"quarantined"`
	// Fields changed between the approved and the pending definition.
	Fields []string `json:"fields,omitempty"`
}

// Pins returns every pin in the store, sorted by tool, with whether the
// tool is quarantined in this host. Errors wrap ErrStoreUnavailable.
func (h *Host) Pins(ctx context.Context) ([]PinInfo, error) {
	db, err := h.db(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pinStoreBound)
	defer cancel()
	list, err := db.Pins(ctx)
	if err != nil {
		return nil, errors.Join(ErrStoreUnavailable, err)
	}
	out := make([]PinInfo, 0, len(list))
	for _, p := range list {
		pi := PinInfo{Pin: p, Quarantined: h.quarantined(p.Tool)}
		if p.Pending() && p.Approved() {
			pi.Fields = ChangedFields([]byte(p.Definition), []byte(p.PendingDefinition))
		}
		out = append(out, pi)
	}
	return out, nil
}

// ApproveTool approves the definition of the catalogue tool name that
// waits for approval (hash, when not "", must be its hash: the definition
// the operator reviewed), as approved by by, then reads the pins again
// (RefreshPins): the tool is released. The action is audited
// ("admin/approve_tool"). Errors: ErrNothingToApprove, ErrStoreUnavailable,
// ErrClosed.
func (h *Host) ApproveTool(ctx context.Context, name, hash, by string) (err error) {
	defer func() { h.AuditAdmin(ctx, "approve_tool", name, err) }()
	db, err := h.db(ctx)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, pinStoreBound)
	ok, err := db.ApprovePin(sctx, name, hash, by)
	cancel()
	if err != nil {
		return errors.Join(ErrStoreUnavailable, err)
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrNothingToApprove, name)
	}
	return h.RefreshPins(ctx)
}
