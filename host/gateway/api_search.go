package gateway

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/search"
)

// SearchResult is the answer of GET /api/v1/search: the caller's profile's
// best matches, best first (host.SearchHit: name, title, description,
// inputSchema, score).
type SearchResult struct {
	Tools []host.SearchHit `json:"tools"`
}

// searchTools serves GET /api/v1/search?q=QUERY&limit=N (issue 27): the
// tools of the caller's profile that best match q (Host.Search: BM25 over
// names, titles, descriptions and parameters), at most limit (1 to 50,
// default 5), whatever the profile's catalogue mode. A missing or
// unsearchable q, or a bad limit, is 400 bad_request.
func (g *Gateway) searchTools(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "q", "limit") {
		return
	}
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > search.MaxLimit {
			badRequest(w, "query parameter \"limit\" is %q: use 1 to %d (default %d)", s, search.MaxLimit, search.DefaultLimit)
			return
		}
		limit = n
	}
	c := CallerFrom(r.Context())
	var s host.Searcher = g.h
	if c.Profile != "" {
		v, err := g.h.Profile(c.Profile)
		if err != nil {
			writeHostError(w, err)
			return
		}
		s = v
	}
	hits, err := s.Search(host.WithClient(r.Context(), c.Client), q.Get("q"), limit)
	switch {
	case errors.Is(err, search.ErrEmptyQuery) || errors.Is(err, search.ErrQueryTooLong) || errors.Is(err, search.ErrLimit):
		badRequest(w, "query parameter \"q\": %v", err)
		return
	case err != nil:
		writeHostError(w, err)
		return
	}
	if hits == nil {
		hits = []host.SearchHit{}
	}
	WriteJSON(w, http.StatusOK, SearchResult{Tools: hits})
}
