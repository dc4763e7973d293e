package gateway

import "github.com/modelcontextprotocol/go-sdk/auth"

// acquireREST takes one of the caller's max_concurrent slots for a REST
// call that reaches a backend (POST /api/v1/mcp/invoke): the same count as
// its MCP requests over HTTP, so a client cannot pass its limit by
// switching API. It returns the release, or the refusal's message when
// the client is at its limit.
func (gd *guard) acquireREST(c Caller) (release func(), refusal string) {
	lim, key := gd.limits(&auth.TokenInfo{UserID: c.Client})
	gd.mu.Lock()
	defer gd.mu.Unlock()
	u := gd.use(c.Client)
	if u.inflight >= lim.MaxConcurrent {
		gd.unuse(c.Client)
		return nil, clientBusy(c.Client, u.inflight, key)
	}
	u.inflight++
	return func() {
		gd.mu.Lock()
		defer gd.mu.Unlock()
		u.inflight--
		gd.unuse(c.Client)
	}, ""
}
