package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

// auditQuery serves GET /api/v1/audit. When the host's audit records go to
// its store ([store] audit, with a store: toolhost serve always has one),
// it answers from the store (auditFromStore); otherwise from the gateway's
// ring of recent records (auditRecords), as before. The ring stays the
// dashboard's live feed either way.
func (g *Gateway) auditQuery(w http.ResponseWriter, r *http.Request) {
	if !g.h.StoreStatus().Audit {
		g.auditRecords(w, r)
		return
	}
	g.auditFromStore(w, r)
}

// maxAuditParam bounds a filter value of GET /api/v1/audit (bytes).
const maxAuditParam = 1024

// auditFromStore serves GET /api/v1/audit?tool=&client=&outcome=&backend=
// &op=&correlation_id=&since=&until=&limit=&cursor= from the store:
// {"records": [host.AuditRecord, ...], "next_cursor": "..."}, newest
// first, at most limit (1..1000, default 100) records; next_cursor (absent
// on the last page) is passed back as cursor for the next page. tool is a
// glob (* and ?); since and until (exclusive) are RFC 3339 times; the
// other filters match exactly. A non-admin caller gets only its own
// client's records. Errors: 400 bad_request (an unknown parameter, a bad
// limit, time or cursor, a value over the API's bound), 403 forbidden (a
// non-admin's client=OTHER), 503 store_unavailable.
func (g *Gateway) auditFromStore(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	if !CheckQuery(w, r, "tool", "client", "outcome", "backend", "op", "correlation_id", "since", "until", "limit", "cursor") {
		return
	}
	q := r.URL.Query()
	for k, vs := range q {
		for _, v := range vs {
			if len(v) > maxAuditParam {
				badRequest(w, "query parameter %q is longer than %d bytes", k, maxAuditParam)
				return
			}
		}
	}
	f := store.AuditFilter{Tool: q.Get("tool"), Client: q.Get("client"), Outcome: q.Get("outcome"), Backend: q.Get("backend"),
		Op: q.Get("op"), CorrelationID: q.Get("correlation_id"), Cursor: q.Get("cursor")}
	if !c.Admin {
		if f.Client != "" && f.Client != c.Client {
			WriteError(w, http.StatusForbidden, "forbidden", "a client that is not an admin sees only its own audit records")
			return
		}
		f.Client = c.Client
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxAuditLimit {
			badRequest(w, "limit must be an integer from 1 to %d, not %q", store.MaxAuditLimit, s)
			return
		}
		f.Limit = n
	}
	for _, t := range []struct {
		name string
		into *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(t.name); s != "" {
			tm, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				badRequest(w, "%s must be an RFC 3339 time (2026-11-27T05:00:00Z), not %q", t.name, s)
				return
			}
			*t.into = tm
		}
	}
	rows, next, err := g.h.QueryAudit(r.Context(), f)
	switch {
	case errors.Is(err, store.ErrFilter), errors.Is(err, store.ErrCursor):
		badRequest(w, "%v", err)
		return
	case err != nil:
		g.logger.Warn("audit query", "error", err)
		WriteError(w, host.HTTPStatus(host.KindStoreUnavailable), host.KindStoreUnavailable, fmt.Sprintf("the audit store did not answer: %v", err))
		return
	}
	recs := make([]json.RawMessage, 0, len(rows))
	for _, row := range rows {
		recs = append(recs, row.Record)
	}
	body := map[string]any{"records": recs}
	if next != "" {
		body["next_cursor"] = next
	}
	WriteJSON(w, http.StatusOK, body)
}

// storeStatus serves GET /api/v1/store: the host's store and its audit
// writer, host.StoreStatus ({engine, url, mode, audit, queued, written,
// dropped, swept, last_error}).
func (g *Gateway) storeStatus(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r) {
		return
	}
	WriteJSON(w, http.StatusOK, g.h.StoreStatus())
}
