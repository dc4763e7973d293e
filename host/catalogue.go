package host

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
