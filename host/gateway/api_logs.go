package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/toolhost/toolhost/host"
)

// Bounds of GET /api/v1/servers/{name}/logs.
const (
	// DefaultLogTail is the lines returned without ?tail=.
	DefaultLogTail = 100
	// MaxLogTail is the most ?tail= may ask for.
	MaxLogTail = host.MaxLogTail
)

// LogsResponse is the body of GET /api/v1/servers/{name}/logs.
type LogsResponse struct {
	// Server is the backend's name.
	Server string `json:"server"`
	// Lines are the last lines of its log file, oldest first, already
	// redacted (see host.Host.Logs: a line over 64 KiB is cut).
	Lines []string `json:"lines"`
}

// serverLogs serves GET /api/v1/servers/{name}/logs?tail=N: the last N
// lines (default 100, 1 to 10,000) of backend name's log file ([host]
// log_directory) as a LogsResponse. Errors: 400 "bad_request" (an unknown
// query parameter, tail not an integer in range); 404 "not_found" (no
// such backend, or one the caller may not see: a non-admin client sees
// the logs of a backend only when its profile allows one of its tools);
// 404 "no_logs" (no log_directory, or nothing logged yet); 500
// "internal" (the file could not be read).
func (g *Gateway) serverLogs(w http.ResponseWriter, r *http.Request) {
	if !CheckQuery(w, r, "tail") {
		return
	}
	tail := DefaultLogTail
	if s := r.URL.Query().Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLogTail {
			WriteError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("query parameter \"tail\" must be an integer from 1 to %d (default %d)", MaxLogTail, DefaultLogTail))
			return
		}
		tail = n
	}
	name := r.PathValue("name")
	notFound := func() {
		WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no backend %q: backends are the [servers.NAME] and [plugins.NAME] tables of the configuration", logsClip(name, 64)))
	}
	if !g.mayReadLogs(CallerFrom(r.Context()), name) {
		notFound()
		return
	}
	if g.opts.Logs == nil {
		WriteError(w, http.StatusNotFound, "no_logs", ErrNoLogs.Error()+": this gateway serves no log files")
		return
	}
	lines, err := g.opts.Logs(name, tail)
	switch {
	case errors.Is(err, host.ErrUnknownBackend):
		notFound()
		return
	case errors.Is(err, ErrNoLogs):
		WriteError(w, http.StatusNotFound, "no_logs", fmt.Sprintf("%s for %q: set [host] log_directory, or wait until the backend logs something", ErrNoLogs, name))
		return
	case err != nil:
		g.logger.Error("reading a log file", "backend", name, "error", err)
		WriteError(w, http.StatusInternalServerError, "internal", "the log file could not be read; see the gateway's log")
		return
	}
	if lines == nil {
		lines = []string{}
	}
	WriteJSON(w, http.StatusOK, LogsResponse{Server: name, Lines: lines})
}

// mayReadLogs reports whether c may read backend name's log: an admin
// may read any; another client only a backend that its profile allows at
// least one tool of (a log says what a server does, its arguments
// included).
func (g *Gateway) mayReadLogs(c Caller, name string) bool {
	if c.Admin {
		return true
	}
	ds := g.h.Decisions()
	if c.Profile != "" {
		v, err := g.h.Profile(c.Profile)
		if err != nil {
			return false
		}
		ds = v.Decisions()
	}
	for _, d := range ds {
		if d.Allowed && d.Backend == name {
			return true
		}
	}
	return false
}

// logsClip cuts s to n bytes for an error message.
func logsClip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
