package gateway

import "net/http"

// The dashboard (see routes.go). Skeleton: each answers 501 until built.

func (g *Gateway) dashboardAuth(next http.Handler) http.Handler        { return next }
func (g *Gateway) dashboard(w http.ResponseWriter, r *http.Request)    { notYet(w, r) }
func (g *Gateway) login(w http.ResponseWriter, r *http.Request)        { notYet(w, r) }
func (g *Gateway) logout(w http.ResponseWriter, r *http.Request)       { notYet(w, r) }
func (g *Gateway) static() http.Handler                                { return http.HandlerFunc(notYet) }
func (g *Gateway) events(w http.ResponseWriter, r *http.Request)       { notYet(w, r) }
func (g *Gateway) auditRecords(w http.ResponseWriter, r *http.Request) { notYet(w, r) }
