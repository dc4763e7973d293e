package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/search"
)

// Tool search (issue 27, item 1). With catalogue = "search" ([serve] or the
// profile's; config.ToolSearch), a profile's MCP server lists, instead of
// every tool the profile allows:
//
//   - search_tools {query, limit?}: the best matches of the profile's
//     catalogue (host.View.Search: BM25 over names, titles, descriptions
//     and parameters), each with its name, title, description and
//     inputSchema, as structuredContent {"tools": [...]} and the same JSON
//     as text;
//   - call_tool {name, arguments?}: calls a catalogue tool exactly as a
//     tools/call of it would (callTool: the host pipeline under the
//     client's profile, so policy, validation, grants, rate limits and
//     audit apply, and the audit record names the inner tool);
//   - the catalogue tools that always matches.
//
// A tools/call of a catalogue tool that search mode does not list is served
// too (callHidden): the model may call a name it found earlier, and the
// call takes the same pipeline as through call_tool, so allowing it opens
// nothing. Names that are not in the profile's catalogue still get the
// go-sdk's unknown-tool error.
//
// The description of search_tools names the number of tools and the
// backends, so a change of the catalogue changes it and the clients get
// notifications/tools/list_changed as in full mode.

// Names of the meta-tools. A catalogue tool of the same name is not listed
// in search mode, nor served by a direct tools/call: call it through
// call_tool.
const (
	SearchToolsName = "search_tools"
	CallToolName    = "call_tool"
)

// maxSearchArgs bounds the arguments of search_tools (a query is at most
// search.MaxQueryBytes).
const maxSearchArgs = 4 << 10

// searchState is a profile server's tool-search state; sync (under ps.mu)
// writes it, callHidden reads hidden.
type searchState struct {
	config func() *config.Config // the Host's configuration in force
	// meta is the fingerprint of the meta-tools registered ("": none).
	meta string
	// hidden are the profile's catalogue tools search mode does not list
	// (nil in full mode); replaced whole.
	hidden atomic.Pointer[map[string]bool]
}

// searchSync is called by sync with the profile's tools: in full mode it
// removes the meta-tools (if registered) and returns tools; in search mode
// it registers the meta-tools and returns the tools to list (those always
// matches, but none named like a meta-tool).
func (ps *profileServer) searchSync(tools []host.Tool, logger hclog.Logger) []host.Tool {
	ts := config.ToolSearch{Catalogue: config.CatalogueFull}
	if ps.search.config != nil {
		ts = ps.search.config().ToolSearchOf(ps.profile)
	}
	if ts.Catalogue != config.CatalogueSearch {
		if ps.search.meta != "" {
			ps.srv.RemoveTools(SearchToolsName, CallToolName)
			ps.search.meta = ""
			ps.search.hidden.Store(nil)
		}
		return tools
	}
	listed := make([]host.Tool, 0, len(ts.Always))
	hidden := map[string]bool{}
	backends := map[string]bool{}
	for _, t := range tools {
		backends[t.Backend] = true
		switch {
		case t.Name == SearchToolsName || t.Name == CallToolName:
			// Reached through call_tool only: the name is the meta-tool's.
		case ts.ListsAlways(t.Name):
			listed = append(listed, t)
		default:
			hidden[t.Name] = true
		}
	}
	ps.search.hidden.Store(&hidden)
	st, ct := metaTools(len(tools), slices.Sorted(maps.Keys(backends)))
	if fp := fingerprint(st) + fingerprint(ct); fp != ps.search.meta {
		if ps.search.meta == "" {
			logger.Debug("tool search on: listing search_tools and call_tool", "always", ts.Always)
		}
		// Registered here, not by sync's loop: not in ps.tools, so a
		// catalogue tool of the same name is never removed in their place.
		delete(ps.tools, SearchToolsName)
		delete(ps.tools, CallToolName)
		ps.srv.AddTool(st, ps.searchTools)
		ps.srv.AddTool(ct, ps.callNamed)
		ps.search.meta = fp
	}
	return listed
}

// maxBackendsNamed bounds the backends search_tools's description names.
const maxBackendsNamed = 40

// metaTools returns the definitions of search_tools and call_tool for a
// catalogue of n tools from backends.
func metaTools(n int, backends []string) (st, ct *mcp.Tool) {
	from := strings.Join(backends[:min(len(backends), maxBackendsNamed)], ", ")
	if len(backends) > maxBackendsNamed {
		from += fmt.Sprintf(" and %d more", len(backends)-maxBackendsNamed)
	}
	st = &mcp.Tool{
		Name:  SearchToolsName,
		Title: "Search tools",
		Description: fmt.Sprintf("Find tools by what you want to do, in a catalogue of %d tools (from: %s) that are not listed here. "+
			"Returns the best matches with their name, description and inputSchema; call one with call_tool.", n, from),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "What you want to do, in a few words (e.g. \"create a GitHub issue\")."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": search.MaxLimit, "description": fmt.Sprintf("How many tools to return (default %d).", search.DefaultLimit)},
			},
			"required": []any{"query"},
		},
		OutputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tools": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			},
			"required": []any{"tools"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	ct = &mcp.Tool{
		Name:        CallToolName,
		Title:       "Call a tool",
		Description: "Call a tool that search_tools found, by its exact name, with arguments that match its inputSchema. Returns that tool's result.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools gave it."},
				"arguments": map[string]any{"type": "object", "description": "The tool's arguments."},
			},
			"required": []any{"name"},
		},
	}
	return st, ct
}

// FoundTool is one tool in the result of search_tools.
type FoundTool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// searchTools answers search_tools. Bad arguments and search errors are
// isError results (MCP 2025-11-25 server/tools, "Error Handling"): the
// model reads them and tries again.
func (ps *profileServer) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	if err := decodeMetaArgs(req.Params.Arguments, maxSearchArgs, &in); err != nil {
		return toolError("search_tools: %v", err), nil
	}
	if in.Query == nil {
		return toolError(`search_tools: the argument "query" is required: say in a few words what the tool should do`), nil
	}
	limit := 0
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > search.MaxLimit {
			return toolError("search_tools: limit %d is out of range: use 1 to %d", *in.Limit, search.MaxLimit), nil
		}
		limit = *in.Limit
	}
	s, ok := ps.view.(host.Searcher)
	if !ok {
		return toolError("search_tools: this catalogue cannot be searched"), nil
	}
	ctx = host.WithClient(ctx, clientName(req.Extra))
	hits, err := s.Search(ctx, *in.Query, limit)
	if err != nil {
		return toolError("search_tools: %v", err), nil
	}
	found := make([]FoundTool, 0, len(hits))
	for _, h := range hits {
		schema := h.InputSchema
		if t, ok := forClients(&mcp.Tool{InputSchema: schema}); ok {
			schema = t.InputSchema
		}
		found = append(found, FoundTool{Name: h.Name, Title: h.Title, Description: h.Description, InputSchema: schema})
	}
	out := map[string]any{"tools": found}
	text, err := json.Marshal(out)
	if err != nil {
		return toolError("search_tools: %v", err), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: json.RawMessage(text)}, nil
}

// callNamed answers call_tool: the call of the named catalogue tool as a
// tools/call of it (callTool), under the client's profile. It never calls
// a meta-tool, so it cannot recurse.
func (ps *profileServer) callNamed(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeMetaArgs(req.Params.Arguments, -1, &in); err != nil {
		return toolError("call_tool: %v", err), nil
	}
	// The name is always a catalogue name, never a meta-tool's: a
	// catalogue tool named search_tools or call_tool is reached this way.
	if in.Name == nil || *in.Name == "" {
		return toolError(`call_tool: the argument "name" is required: the name of a tool search_tools found`), nil
	}
	args := bytes.TrimSpace(in.Arguments)
	if len(args) > 0 && args[0] != '{' && !bytes.Equal(args, []byte("null")) {
		return toolError(`call_tool: "arguments" must be an object`), nil
	}
	if bytes.Equal(args, []byte("null")) {
		args = nil
	}
	inner := *req
	params := *req.Params
	params.Name = *in.Name
	params.Arguments = args
	inner.Params = &params
	return ps.callTool(*in.Name)(ctx, &inner)
}

// callHidden serves a tools/call of a catalogue tool that search mode does
// not list as a listed tool's call (see the comment at the top).
func (ps *profileServer) callHidden(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		if h := ps.search.hidden.Load(); h == nil || !(*h)[r.Params.Name] {
			return next(ctx, method, req)
		}
		return ps.callTool(r.Params.Name)(ctx, r)
	}
}

// decodeMetaArgs decodes the arguments of a meta-tool into v, refusing
// unknown keys, and more than limit bytes when limit >= 0.
func decodeMetaArgs(raw json.RawMessage, limit int, v any) error {
	if limit >= 0 && len(raw) > limit {
		return fmt.Errorf("arguments of %d bytes: at most %d", len(raw), limit)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("argument %q must be a %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64":
		return "whole number"
	}
	return "JSON " + goKind
}

// toolError is an isError result with the text format makes.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
