package host

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/search"
)

// Tool search (issue 27, item 1): a BM25 index (package host/search) over
// the tools a view lists, built on the first search and built again on the
// first search after the catalogue changed.

// SearchHit is one tool found by Search: its catalogue definition as the
// view lists it, and its BM25 score (higher is better; only comparable
// within one search).
type SearchHit struct {
	Name        string  `json:"name"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	InputSchema any     `json:"inputSchema"`
	Score       float64 `json:"score"`
}

// Searcher is implemented by *Host and *View: the catalogues that can be
// searched.
type Searcher interface {
	Search(ctx context.Context, query string, limit int) ([]SearchHit, error)
}

var (
	_ Searcher = (*Host)(nil)
	_ Searcher = (*View)(nil)
)

// Search returns the tools of the catalogue (as Host.Tools lists them: the
// global [policy] only) that best match query, best first, ties by name:
// at most limit (0 means search.DefaultLimit, 5; at most search.MaxLimit,
// 50). The ranking is BM25 over each tool's name (split at "__", "_", "-"
// and camelCase), title, description and parameter names and descriptions;
// see package host/search for the weights, k1 and b. A tool that no word
// of query matches is not returned, so fewer than limit hits (or none) is
// normal.
//
// The index is built on the first search and again on the first search
// after the catalogue changed (a backend started, restarted with other
// tools or announced tools/list_changed; Apply; a tool disabled or
// quarantined): costs O(the catalogue's text) then, O(the query's
// postings) otherwise. Like Tools, it starts lazy backends first.
//
// Errors: search.ErrQueryTooLong (over 1024 bytes), search.ErrEmptyQuery
// (no searchable word), search.ErrLimit (limit < 0 or > 50), ErrClosed. A
// search is not audited (it reaches no backend); calling a hit is.
func (h *Host) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	return h.search(ctx, "", query, limit)
}

// Search returns the tools of the view that best match query (see
// Host.Search): only those the profile allows.
func (v *View) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	return v.h.search(ctx, v.name, query, limit)
}

// searchIndexes are the search indexes of the views, by profile name.
type searchIndexes struct {
	mu     sync.Mutex
	byView map[string]*viewIndex
}

// viewIndex is the index of one view, and the definitions it was built
// from: the *mcp.Tool of each listed entry, in name order. Host.rebuild
// makes a new *mcp.Tool for every tool, so an equal list of pointers means
// an unchanged listing.
type viewIndex struct {
	tools []*mcp.Tool
	ix    *search.Index
}

func (h *Host) search(ctx context.Context, profile, query string, limit int) ([]SearchHit, error) {
	// Argument errors first: they need no catalogue.
	if _, err := (*search.Index)(nil).Search(query, limit, nil); err != nil {
		return nil, fmt.Errorf("host: search: %w", err)
	}
	tools, err := h.listedDefinitions(ctx, profile)
	if err != nil {
		return nil, err
	}
	vi := h.searchIndex(profile, tools)
	hits, err := vi.ix.Search(query, limit, nil)
	if err != nil {
		return nil, fmt.Errorf("host: search: %w", err)
	}
	out := make([]SearchHit, len(hits))
	for i, hit := range hits {
		t := vi.tools[hit.Doc]
		out[i] = SearchHit{Name: t.Name, Title: toolTitle(t), Description: t.Description, InputSchema: t.InputSchema, Score: hit.Score}
	}
	return out, nil
}

// listedDefinitions returns the definitions (shared, read-only) of the
// tools the view of profile lists now, in name order: those Tools returns.
func (h *Host) listedDefinitions(ctx context.Context, profile string) ([]*mcp.Tool, error) {
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
	out := make([]*mcp.Tool, 0, len(vw.names))
	for _, n := range vw.names {
		e := h.tools[n]
		if !e.b.listed() || h.quarantined(n) || h.toolOff(n) {
			continue
		}
		out = append(out, e.tool)
	}
	return out, nil
}

// searchIndex returns the index of profile's view for tools, building it
// when the view's listing changed since the last one.
func (h *Host) searchIndex(profile string, tools []*mcp.Tool) *viewIndex {
	s := &h.searchIdx
	s.mu.Lock()
	defer s.mu.Unlock()
	if vi := s.byView[profile]; vi != nil && slices.Equal(vi.tools, tools) {
		return vi
	}
	docs := make([]search.Doc, len(tools))
	for i, t := range tools {
		docs[i] = search.Doc{Name: t.Name, Title: toolTitle(t), Description: t.Description, Params: search.ParamsOf(t.InputSchema)}
	}
	vi := &viewIndex{tools: tools, ix: search.New(docs)}
	if s.byView == nil {
		s.byView = map[string]*viewIndex{}
	}
	s.byView[profile] = vi
	return vi
}

// toolTitle is the tool's display title: title, else annotations.title
// (MCP 2025-11-25 server/tools).
func toolTitle(t *mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil {
		return t.Annotations.Title
	}
	return ""
}
