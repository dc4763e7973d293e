package gateway

import "net/http"

// The REST API's handlers (see routes.go). Skeleton: each answers 501
// until built.

func notYet(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, http.StatusNotImplemented, "not_implemented", "not implemented yet")
}

func (g *Gateway) openAPI(w http.ResponseWriter, r *http.Request)         { notYet(w, r) }
func (g *Gateway) listTools(w http.ResponseWriter, r *http.Request)       { notYet(w, r) }
func (g *Gateway) getTool(w http.ResponseWriter, r *http.Request)         { notYet(w, r) }
func (g *Gateway) invoke(w http.ResponseWriter, r *http.Request)          { notYet(w, r) }
func (g *Gateway) circuitBreakers(w http.ResponseWriter, r *http.Request) { notYet(w, r) }
func (g *Gateway) toolMetrics(w http.ResponseWriter, r *http.Request)     { notYet(w, r) }
func (g *Gateway) status(w http.ResponseWriter, r *http.Request)          { notYet(w, r) }
func (g *Gateway) restartServer(w http.ResponseWriter, r *http.Request)   { notYet(w, r) }
func (g *Gateway) enableServer(w http.ResponseWriter, r *http.Request)    { notYet(w, r) }
func (g *Gateway) disableServer(w http.ResponseWriter, r *http.Request)   { notYet(w, r) }
func (g *Gateway) enableTool(w http.ResponseWriter, r *http.Request)      { notYet(w, r) }
func (g *Gateway) disableTool(w http.ResponseWriter, r *http.Request)     { notYet(w, r) }
func (g *Gateway) reload(w http.ResponseWriter, r *http.Request)          { notYet(w, r) }
