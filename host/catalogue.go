package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
)

// Catalogue is what a program serves or lists: the tools, prompts,
// resources and resource templates of a Host as one view sees them. *Host
// is the view of no profile (the global [policy] alone); the *View that
// Host.Profile returns is a profile's ([profiles.NAME]: the global policy
// and the profile). Each method is documented on *Host; the *View method of
// the same name applies the profile too and, while a backend the profile
// requires is down, fails with ErrRequiredBackend.
//
// Names are catalogue names (config.ToolName: a backend's prefix + its own
// name); listings are sorted (tools and prompts by name, resources by URI,
// templates by URI template) and each element is a copy the caller may
// keep. Every operation but the listings is audited (Options.Audit,
// [host] audit_log). Errors wrap the host's sentinels (ErrUnknownTool,
// ErrToolNotAllowed, ErrPromptNotAllowed, ErrResourceNotAllowed,
// ErrBackendUnavailable, ErrTimeout, ErrClosed, ...; see Host.CallTool).
// Both implementations are safe for concurrent use, and valid until the
// Host is closed (then they return ErrClosed).
type Catalogue interface {
	// Tools lists the tools the view allows (Host.Tools).
	Tools(ctx context.Context) ([]Tool, error)
	// CallTool calls the tool name with args: nil, a JSON object as
	// json.RawMessage or []byte, or a value that encodes to one
	// (Host.CallTool).
	CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error)
	// Prompts lists the prompts the view allows (Host.Prompts).
	Prompts(ctx context.Context) ([]Prompt, error)
	// GetPrompt renders the prompt name with args (Host.GetPrompt).
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	// Resources lists the resources the view allows (Host.Resources).
	Resources(ctx context.Context) ([]Resource, error)
	// ReadResource reads uri from the backend named backend
	// (Host.ReadResource).
	ReadResource(ctx context.Context, backend, uri string) (*mcp.ReadResourceResult, error)
	// ResourceTemplates lists the resource templates the view allows
	// (Host.ResourceTemplates).
	ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error)
	// Complete answers completion/complete (Host.Complete).
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

var (
	_ Catalogue = (*Host)(nil)
	_ Catalogue = (*View)(nil)
)

// Tool is one catalogue entry: the backend's definition with Name replaced by
// the namespaced catalogue name.
type Tool struct {
	*mcp.Tool
	// Backend is the name of the backend that serves the tool.
	Backend string
	// BackendTool is the tool's own name on its backend.
	BackendTool string
	// Disabled: the tool is disabled at run time (Host.DisableTool);
	// only AllTools lists such a tool.
	Disabled bool
}

// Prompt is one catalogue prompt, namespaced like tools.
type Prompt struct {
	*mcp.Prompt
	Backend       string
	BackendPrompt string
}

// Resource is one resource with the backend that serves it. URIs are not
// namespaced: they are the backend's own.
type Resource struct {
	*mcp.Resource
	Backend string
}

// Tools returns the catalogue as the global [policy] allows it, sorted by
// name. Each Tool's definition is a copy; callers may keep and modify it.
// Lazy backends that have not started yet are started first (within ctx),
// and eager backends still making their first attempt to start are waited
// for, each up to its startup_timeout from this call, within ctx: a backend
// still not ready then is left out (Status shows it starting, or restarting
// with its error, with 0 tools).
// The tools of a failed backend are not listed.
func (h *Host) Tools(ctx context.Context) ([]Tool, error) { return h.viewTools(ctx, "") }

func (h *Host) viewTools(ctx context.Context, profile string) ([]Tool, error) {
	return h.listTools(ctx, profile, false)
}

// listTools lists the tools of the view of profile; withDisabled adds
// those disabled at run time (Tool.Disabled).
func (h *Host) listTools(ctx context.Context, profile string, withDisabled bool) ([]Tool, error) {
	h.ensureStarted(ctx)
	h.awaitEager(ctx)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	vw := h.views[profile]
	if vw == nil {
		return nil, profileRemoved(profile)
	}
	out := make([]Tool, 0, len(vw.names))
	for _, n := range vw.names {
		e := h.tools[n]
		if !e.b.listed() || h.quarantined(n) {
			continue
		}
		off := h.toolOff(n)
		if off && !withDisabled {
			continue
		}
		cp := *e.tool
		out = append(out, Tool{Tool: &cp, Backend: e.b.name, BackendTool: e.name, Disabled: off})
	}
	return out, nil
}

// ToolOptionProblems lists the [tools.NAME] tables that name a tool, or a
// fallback, that is not in the catalogue (a typo, or a tool the backend's
// tools/deny_tools leave out). A name is checked only against a catalogue
// that can answer for it: when no backend's tool prefix fits it (see Needs),
// or when every backend whose prefix fits it has listed its tools (it has
// started at least once and is not disabled). A name one of whose possible
// owners has not listed yet (lazy and not used, a call that started only its
// own backends, a start that failed) is not reported: it may still come.
// toolhost check --profile prints them; New and Apply log them.
func (h *Host) ToolOptionProblems() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	tools := h.config().Tools
	missing := func(name string) bool {
		if _, ok := h.tools[name]; ok {
			return false
		}
		for _, b := range h.all() {
			if !config.MayOwnToolName(b.prefix, name) {
				continue
			}
			b.mu.Lock()
			listed := b.known && b.state != StateClosed && b.state != StateDisabled
			b.mu.Unlock()
			if !listed {
				return false
			}
		}
		return true
	}
	for _, name := range sortedKeys(tools) {
		t := tools[name]
		if missing(name) {
			out = append(out, fmt.Sprintf("[tools.%s] (line %d): no tool %q in the catalogue", name, t.Line, name))
		}
		for _, fb := range t.Fallback {
			if missing(fb) {
				out = append(out, fmt.Sprintf("[tools.%s] (line %d): fallback %q is not in the catalogue", name, t.Line, fb))
			}
		}
	}
	return out
}
