package transport

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/buildinfo"
)

// ClientName is the client name toolhost reports in clientInfo.name (its
// clientInfo.version is buildinfo.Version).
const ClientName = "toolhost"

// newClient builds the go-sdk client used by both MCP transports. Server log
// notifications (notifications/message) go to logger at their level;
// list_changed notifications to onChange, when set; progress notifications
// to progress. copts (nil: none) says which client capabilities to declare
// and answers the server's requests; calls ties them to the call in flight.
func newClient(logger hclog.Logger, onChange func(ListKind), progress *progressRouter, copts *ClientOptions, calls *callSet) *mcp.Client {
	var tools func(context.Context, *mcp.ToolListChangedRequest)
	var prompts func(context.Context, *mcp.PromptListChangedRequest)
	var resources func(context.Context, *mcp.ResourceListChangedRequest)
	if onChange != nil {
		tools = func(context.Context, *mcp.ToolListChangedRequest) { onChange(ListTools) }
		prompts = func(context.Context, *mcp.PromptListChangedRequest) { onChange(ListPrompts) }
		resources = func(context.Context, *mcp.ResourceListChangedRequest) { onChange(ListResources) }
	}
	if copts == nil {
		copts = &ClientOptions{}
	}
	// No capability unless the embedder supplies what answers it: a server
	// must not be able to drive toolhost.
	caps := &mcp.ClientCapabilities{}
	var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	if f := copts.Elicit; f != nil {
		elicit = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			markElicitRan(ctx)
			ctx, done := calls.inCall(ctx)
			defer done()
			return f(ctx, req)
		}
	}
	var sample func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	if f := copts.Sample; f != nil {
		sample = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			ctx, done := calls.inCall(ctx)
			defer done()
			return f(ctx, req)
		}
	}
	if len(copts.Roots) > 0 || copts.ListRoots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: ClientName, Version: buildinfo.Version}, &mcp.ClientOptions{
		ToolListChangedHandler:     tools,
		PromptListChangedHandler:   prompts,
		ResourceListChangedHandler: resources,
		// notifications/progress go to the call that asked (WithProgress).
		ProgressNotificationHandler: progress.handle,
		Capabilities:                caps,
		ElicitationHandler:          elicit,
		CreateMessageHandler:        sample,
		Logger:                      slog.New(slog.DiscardHandler),
		// Logging is deprecated as of protocol version 2026-07-28 (SEP-2577)
		// but servers still send notifications/message.
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logServerMessage(logger, req.Params)
			calls.handlerLog(req.Params) // to the call that asked (WithLog)
		},
	})
	if len(copts.Roots) > 0 {
		c.AddRoots(copts.Roots...)
	}
	if elicit != nil {
		c.AddReceivingMiddleware(checkedElicit(elicit))
	}
	if f := copts.ListRoots; f != nil {
		c.AddReceivingMiddleware(relayRoots(f, calls))
	}
	return c
}

// session adds capability gating, pagination and error classification to a
// go-sdk ClientSession. It is shared by Stdio and HTTP.
type session struct {
	cs   *mcp.ClientSession
	init *mcp.InitializeResult

	logMu    sync.Mutex       // held while the level is being changed
	logLevel mcp.LoggingLevel // the level last set with logging/setLevel ("": none)

	fast  *fastSession // stdio's own tools/call path (stdio_fast.go); nil: the go-sdk's
	hfast *httpFast    // Streamable HTTP's (http_fast.go); nil: the go-sdk's
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
	return ListPaged(ctx, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
}

func (s *session) callTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if s.fast != nil {
		if res, ok, err := s.fast.callTool(ctx, p); ok {
			return res, err
		}
	}
	if s.hfast != nil {
		if res, ok, err := s.hfast.callTool(ctx, s, p); ok {
			return res, err
		}
	}
	return s.cs.CallTool(ctx, p)
}

func (s *session) listResources(ctx context.Context) ([]*mcp.Resource, error) {
	if s.caps().Resources == nil {
		return nil, fmt.Errorf("resources/list: %w", ErrUnsupported)
	}
	return ListPaged(ctx, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
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
	return ListPaged(ctx, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
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

// ProtocolNoPing is the first MCP protocol version without "ping" (removed
// in 2026-07-28 with sessions, SEP-2575: a go-sdk v1.8 server over HTTP
// answers a ping with "missing or invalid _meta field
// io.modelcontextprotocol/protocolVersion").
const ProtocolNoPing = "2026-07-28"

// ping is the liveness probe for the negotiated protocol version: an MCP
// ping where it exists (up to 2025-11-25), and from ProtocolNoPing on,
// where nothing replaces it on a live connection, the first page of
// tools/list (every server toolhost hosts answers it; a server without the
// tools capability still gets a ping). A server that sets ttlMs on its
// list results (SEP-2549) may have that page answered from the go-sdk's
// cache, so such a server is contacted at most once per ttlMs.
func (s *session) ping(ctx context.Context) error {
	if s.init == nil || s.init.ProtocolVersion < ProtocolNoPing || s.caps().Tools == nil {
		return s.cs.Ping(ctx, nil)
	}
	_, err := s.cs.ListTools(ctx, nil)
	return err
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
	do       func(ctx context.Context, op string, f func(*session) error) error
	progress *progressRouter // the calls that asked for progress (WithProgress)
	calls    *callSet        // the tools/call contexts in flight
}

// run is do with the error's text bounded (capErr).
func (o ops) run(ctx context.Context, op string, f func(*session) error) error {
	return capErr(o.do(ctx, op, f))
}

// Ping implements Transport.
func (o ops) Ping(ctx context.Context) error {
	return o.run(ctx, "ping", func(se *session) error { return se.ping(ctx) })
}

// ListTools implements Transport.
func (o ops) ListTools(ctx context.Context) (tools []*mcp.Tool, err error) {
	err = o.run(ctx, "tools/list", func(se *session) (err error) { tools, err = se.listTools(ctx); return })
	return tools, err
}

// CallTool implements Transport. A ctx from WithProgress asks the server
// for progress.
func (o ops) CallTool(ctx context.Context, p *mcp.CallToolParams) (res *mcp.CallToolResult, err error) {
	ctx = context.WithValue(ctx, callKey{}, true)
	defer o.calls.add(ctx)()
	if f := progressFrom(ctx); f != nil && o.progress != nil {
		token, done := o.progress.register(f)
		defer done()
		p = withToken(p, token)
	}
	err = o.run(ctx, "tools/call", func(se *session) (err error) { res, err = se.callTool(ctx, se.forLog(ctx, p)); return })
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
