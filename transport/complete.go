package transport

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TemplateLister is implemented by transports that can list a backend's
// resource templates (MCP 2025-11-25 server/resources, "Resource
// Templates"). The MCP transports of this package implement it; Wasm
// plugins do not (the host treats a transport without it as
// ErrUnsupported). Concurrency and contexts are as for Transport.
type TemplateLister interface {
	// ListResourceTemplates returns every resource template, following
	// pagination cursors to the end (at most MaxListPages pages and
	// MaxListItems templates, ErrListTooLong beyond). It returns
	// ErrUnsupported when the backend did not declare the resources
	// capability.
	ListResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error)
}

// Completer is implemented by transports that can ask a backend for
// argument completions (MCP 2025-11-25 server/utilities/completion,
// completion/complete). The MCP transports of this package implement it;
// Wasm plugins do not.
type Completer interface {
	// Complete forwards params as they are (params.Ref names the backend's
	// own prompt or resource template). It returns ErrUnsupported when the
	// backend did not declare the completions capability.
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

var (
	_ TemplateLister = (*Stdio)(nil)
	_ TemplateLister = (*HTTP)(nil)
	_ Completer      = (*Stdio)(nil)
	_ Completer      = (*HTTP)(nil)
)

func (s *session) listResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	if s.caps().Resources == nil {
		return nil, fmt.Errorf("resources/templates/list: %w", ErrUnsupported)
	}
	return ListPaged(ctx, "resource templates", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		r, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.ResourceTemplates, r.NextCursor, nil
	})
}

func (s *session) complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if s.caps().Completions == nil {
		return nil, fmt.Errorf("completion/complete: %w", ErrUnsupported)
	}
	return s.cs.Complete(ctx, p)
}

// ListResourceTemplates implements TemplateLister.
func (o ops) ListResourceTemplates(ctx context.Context) (ts []*mcp.ResourceTemplate, err error) {
	err = o.run(ctx, "resources/templates/list", func(se *session) (err error) { ts, err = se.listResourceTemplates(ctx); return })
	return ts, err
}

// Complete implements Completer.
func (o ops) Complete(ctx context.Context, p *mcp.CompleteParams) (res *mcp.CompleteResult, err error) {
	err = o.run(ctx, "completion/complete", func(se *session) (err error) { res, err = se.complete(ctx, p); return })
	return res, err
}
