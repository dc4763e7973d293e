package gateway

import "net/http"

// GET /api/v1/servers/{name}/logs (see routes.go and Options.Logs).
// Skeleton: 501 until built.
func (g *Gateway) serverLogs(w http.ResponseWriter, r *http.Request) { notYet(w, r) }
