package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Run-time switches of single tools (Host.DisableTool, Host.EnableTool):
// the operator's "turn this tool off now" without editing the
// configuration or stopping its backend.

// ErrToolDisabled: the tool was disabled at run time (Host.DisableTool);
// the backend was not called. The error is a *ToolDisabledError. Its
// error kind is "disabled" (HTTP 409).
var ErrToolDisabled = errors.New("tool disabled")

// ToolDisabledError is the error for a call of a tool disabled with
// Host.DisableTool. Its text fits any caller (a program, a person or a
// model).
type ToolDisabledError struct {
	Name string
}

func (e *ToolDisabledError) Error() string {
	return fmt.Sprintf("tool %q is disabled by the operator; calling it again will fail the same way until it is enabled: use another tool from the list of available tools", e.Name)
}

func (e *ToolDisabledError) Unwrap() error { return ErrToolDisabled }

// DisableTool turns the catalogue tool name off for every view: a call is
// refused by the policy layer with a *ToolDisabledError (ErrToolDisabled),
// audited as a refusal (outcome "denied", rule "disabled"), without
// reaching the backend; Tools and View.Tools leave it out (AllTools lists
// it with Disabled set), and an EventCatalogue with Removed naming it
// tells the gateway, whose clients get notifications/tools/list_changed.
// The backend keeps running, its other tools are untouched. A disabled
// tool stays disabled across Host.Apply while the catalogue still has it
// once the new configuration is applied; a tool Apply took away is
// forgotten. Disabling a disabled tool does nothing. Errors: an
// *UnknownToolError (ErrUnknownTool) for a name not in the catalogue,
// ErrClosed.
func (h *Host) DisableTool(name string) error { return h.switchTool(name, true) }

// EnableTool undoes DisableTool: the tool is listed and callable again
// (an EventCatalogue with Added naming it). Enabling a tool that is not
// disabled does nothing. Errors: as DisableTool.
func (h *Host) EnableTool(name string) error { return h.switchTool(name, false) }

func (h *Host) switchTool(name string, off bool) error {
	h.rebuildMu.Lock() // against a concurrent publish: one event order
	defer h.rebuildMu.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if _, ok := h.tools[name]; !ok {
		err := &UnknownToolError{Name: name, Similar: similar(name, h.names)}
		h.mu.Unlock()
		return err
	}
	cur := h.toolsOff.Load()
	was := cur != nil && (*cur)[name]
	if was == off {
		h.mu.Unlock()
		return nil
	}
	next := map[string]bool{}
	if cur != nil {
		next = maps.Clone(*cur)
	}
	if off {
		next[name] = true
	} else {
		delete(next, name)
	}
	h.toolsOff.Store(&next)
	h.mu.Unlock()
	ev := Event{Kind: EventCatalogue}
	if off {
		ev.Removed = []string{name}
	} else {
		ev.Added = []string{name}
	}
	h.emit(ev)
	h.logger.Info("tool switched at run time", "tool", name, "enabled", !off)
	return nil
}

// toolOff reports whether the catalogue tool name is disabled at run time.
func (h *Host) toolOff(name string) bool {
	m := h.toolsOff.Load()
	return m != nil && (*m)[name]
}

// DisabledTools returns the catalogue names disabled with DisableTool,
// sorted.
func (h *Host) DisabledTools() []string {
	m := h.toolsOff.Load()
	if m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(*m))
}

// pruneToolsOff forgets the disabled tools that are no longer in the
// catalogue (after Host.Apply).
func (h *Host) pruneToolsOff() {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.toolsOff.Load()
	if m == nil {
		return
	}
	next := maps.Clone(*m)
	maps.DeleteFunc(next, func(n string, _ bool) bool { _, ok := h.tools[n]; return !ok })
	h.toolsOff.Store(&next)
}

// AllTools is Tools with the tools disabled at run time too (their
// Disabled set): what the view would offer with every tool enabled.
func (h *Host) AllTools(ctx context.Context) ([]Tool, error) { return h.allTools(ctx, "") }

// AllTools is Host.AllTools in the view.
func (v *View) AllTools(ctx context.Context) ([]Tool, error) { return v.h.allTools(ctx, v.name) }

func (h *Host) allTools(ctx context.Context, profile string) ([]Tool, error) {
	return h.listTools(ctx, profile, true)
}

// callRecordKey carries the *AuditRecord WithCallRecord asks to fill.
type callRecordKey struct{}

// WithCallRecord returns a copy of ctx with which a CallTool copies its
// audit record (with its outcome, retries and latency) into *rec before
// it returns, when auditing is on ([host] audit_log or Options.Audit; a
// gateway with metrics sets it). The REST API reads its attempts there.
func WithCallRecord(ctx context.Context, rec *AuditRecord) context.Context {
	return context.WithValue(ctx, callRecordKey{}, rec)
}

// copyCallRecord copies rec into the record WithCallRecord asked for, if
// any. A fallback's record is written first, its tool's after: the tool's
// is the one kept.
func copyCallRecord(ctx context.Context, rec *AuditRecord) {
	if dst, ok := ctx.Value(callRecordKey{}).(*AuditRecord); ok && dst != nil {
		*dst = *rec
	}
}
