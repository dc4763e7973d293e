package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the client version toolhost reports in the MCP initialize
// request (clientInfo.version).
var Version = "0.1.0"

// ClientName is the client name toolhost reports in clientInfo.name.
const ClientName = "toolhost"

// newClient builds the go-sdk client used by both MCP transports. Server log
// notifications (notifications/message) go to logger; list_changed
// notifications to onChange, when set.
func newClient(logger hclog.Logger, onChange func(ListKind)) *mcp.Client {
	var tools func(context.Context, *mcp.ToolListChangedRequest)
	var prompts func(context.Context, *mcp.PromptListChangedRequest)
	var resources func(context.Context, *mcp.ResourceListChangedRequest)
	if onChange != nil {
		tools = func(context.Context, *mcp.ToolListChangedRequest) { onChange(ListTools) }
		prompts = func(context.Context, *mcp.PromptListChangedRequest) { onChange(ListPrompts) }
		resources = func(context.Context, *mcp.ResourceListChangedRequest) { onChange(ListResources) }
	}
	return mcp.NewClient(&mcp.Implementation{Name: ClientName, Version: Version}, &mcp.ClientOptions{
		ToolListChangedHandler:     tools,
		PromptListChangedHandler:   prompts,
		ResourceListChangedHandler: resources,
		// No roots, sampling or elicitation: toolhost is a tool host, not an
		// end-user client, and must not let a server drive it.
		Capabilities: &mcp.ClientCapabilities{},
		Logger:       slog.New(slog.DiscardHandler),
		// Logging is deprecated as of protocol version 2026-07-28 (SEP-2577)
		// but servers still send notifications/message; they go to the debug
		// log rather than being dropped.
		//lint:ignore SA1019 servers speaking older protocol versions still log
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			p := req.Params
			logger.Debug("server log", "level", p.Level, "logger", p.Logger, "data", p.Data)
		},
	})
}

// session adds capability gating, pagination and error classification to a
// go-sdk ClientSession. It is shared by Stdio and HTTP.
type session struct {
	cs   *mcp.ClientSession
	init *mcp.InitializeResult
}

func newSession(cs *mcp.ClientSession) *session {
	return &session{cs: cs, init: capInit(cs.InitializeResult())}
}

func (s *session) caps() *mcp.ServerCapabilities {
	if s.init == nil || s.init.Capabilities == nil {
		return &mcp.ServerCapabilities{}
	}
	return s.init.Capabilities
}

func (s *session) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	if s.caps().Tools == nil {
		// A server without the tools capability has no tools; that is not an
		// error for a catalogue.
		return nil, nil
	}
	return listPaged(ctx, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
}

func (s *session) callTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return s.cs.CallTool(ctx, p)
}

func (s *session) listResources(ctx context.Context) ([]*mcp.Resource, error) {
	if s.caps().Resources == nil {
		return nil, fmt.Errorf("resources/list: %w", ErrUnsupported)
	}
	return listPaged(ctx, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		r, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
}

func (s *session) readResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if s.caps().Resources == nil {
		return nil, fmt.Errorf("resources/read: %w", ErrUnsupported)
	}
	return s.cs.ReadResource(ctx, p)
}

func (s *session) listPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	if s.caps().Prompts == nil {
		return nil, fmt.Errorf("prompts/list: %w", ErrUnsupported)
	}
	return listPaged(ctx, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		r, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Prompts, r.NextCursor, nil
	})
}

func (s *session) getPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if s.caps().Prompts == nil {
		return nil, fmt.Errorf("prompts/get: %w", ErrUnsupported)
	}
	return s.cs.GetPrompt(ctx, p)
}

// ctxError maps a done context to the package's errors: a passed deadline
// wraps both ErrTimeout and context.DeadlineExceeded; a cancellation wraps
// context.Canceled. It returns nil while ctx is live.
func ctxError(ctx context.Context, op string) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w (%w)", op, ErrTimeout, err)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// ops implements Transport's operation methods over a session. Stdio and
// HTTP embed it with their own do, which picks the current session and
// explains a failure in the transport's terms.
type ops struct {
	do func(ctx context.Context, op string, f func(*session) error) error
}

// run is do with the error's text bounded (capErr).
func (o ops) run(ctx context.Context, op string, f func(*session) error) error {
	return capErr(o.do(ctx, op, f))
}

// Ping implements Transport.
func (o ops) Ping(ctx context.Context) error {
	return o.run(ctx, "ping", func(se *session) error { return se.cs.Ping(ctx, nil) })
}

// ListTools implements Transport.
func (o ops) ListTools(ctx context.Context) (tools []*mcp.Tool, err error) {
	err = o.run(ctx, "tools/list", func(se *session) (err error) { tools, err = se.listTools(ctx); return })
	return tools, err
}

// CallTool implements Transport.
func (o ops) CallTool(ctx context.Context, p *mcp.CallToolParams) (res *mcp.CallToolResult, err error) {
	err = o.run(ctx, "tools/call", func(se *session) (err error) { res, err = se.callTool(ctx, p); return })
	return res, err
}

// ListResources implements Transport.
func (o ops) ListResources(ctx context.Context) (rs []*mcp.Resource, err error) {
	err = o.run(ctx, "resources/list", func(se *session) (err error) { rs, err = se.listResources(ctx); return })
	return rs, err
}

// ReadResource implements Transport.
func (o ops) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (res *mcp.ReadResourceResult, err error) {
	err = o.run(ctx, "resources/read", func(se *session) (err error) { res, err = se.readResource(ctx, p); return })
	return res, err
}

// ListPrompts implements Transport.
func (o ops) ListPrompts(ctx context.Context) (ps []*mcp.Prompt, err error) {
	err = o.run(ctx, "prompts/list", func(se *session) (err error) { ps, err = se.listPrompts(ctx); return })
	return ps, err
}

// GetPrompt implements Transport.
func (o ops) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (res *mcp.GetPromptResult, err error) {
	err = o.run(ctx, "prompts/get", func(se *session) (err error) { res, err = se.getPrompt(ctx, p); return })
	return res, err
}
