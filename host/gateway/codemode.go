package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/codemode"
)

// Code mode (issue 27, items 3 and 4): a profile with code mode ([serve]
// code_mode, [profiles.NAME] code_mode) lists run_code, whose description
// declares the profile's tools in TypeScript, regenerated whenever sync
// sees the catalogue change. A run's inner calls go through the profile's
// view (ps.view.CallTool): the host pipeline under the calling client's
// profile, client name and session, so policy, validation, grants, rate
// limits and audit apply to each; their audit records name the run's
// correlation id as Parent. run_code itself is audited by Host.AuditCall
// (Backend "code_mode", Rule "code_mode").

// codeMode is the gateway's one Runner, shared by every profile with code
// mode, built at the first sync that needs it ([code_mode] as it was then:
// a change of the table takes effect at the next start; turning code mode
// on or off for a profile follows a reload) and closed by Gateway.Close.
type codeMode struct {
	mu     sync.Mutex
	runner *codemode.Runner
	closed bool
}

var errGatewayClosed = errors.New("gateway closed")

// codeRunner returns the Runner, building it (its plugin loads in the
// background) on first use.
func (g *Gateway) codeRunner() (*codemode.Runner, error) {
	c := &g.code
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errGatewayClosed
	}
	if c.runner != nil {
		return c.runner, nil
	}
	cfg := g.h.Config()
	r, err := codemode.New(&codemode.Options{Config: cfg.CodeMode, CacheDir: cfg.Host.CacheDir, Logger: g.logger.Named("code_mode")})
	if err != nil {
		return nil, err
	}
	c.runner = r
	return r, nil
}

// close closes the Runner, waiting for its plugin load to end.
func (c *codeMode) close() {
	c.mu.Lock()
	r := c.runner
	c.closed, c.runner = true, nil
	c.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// codeSearch is the tool search of the profile's programs (searchTools):
// the profile's own search (host.View.Search: only the tools it may call)
// when its catalogue is "search", so that a program finds what the
// declarations in run_code's description no longer list; nil otherwise
// (searchTools is then undefined in the program).
func (ps *profileServer) codeSearch() codemode.SearchFunc {
	if ps.search.config == nil || ps.search.config().ToolSearchOf(ps.profile).Catalogue != config.CatalogueSearch {
		return nil
	}
	s, ok := ps.view.(host.Searcher)
	if !ok {
		return nil
	}
	return func(ctx context.Context, query string, limit int) ([]*mcp.Tool, error) {
		hits, err := s.Search(ctx, query, limit)
		if err != nil {
			return nil, err
		}
		out := make([]*mcp.Tool, 0, len(hits))
		for _, h := range hits {
			out = append(out, &mcp.Tool{Name: h.Name, Title: h.Title, Description: h.Description, InputSchema: h.InputSchema})
		}
		return out, nil
	}
}

// syncCodeMode registers run_code on the profile's server, with the
// declarations of tools (what the profile lists now), or removes it when
// code mode is off for the profile. A catalogue tool named run_code (an
// unprefixed backend's) wins, with a warning.
func (ps *profileServer) syncCodeMode(tools []host.Tool, logger hclog.Logger) {
	on := ps.g.h.Config().CodeModeOn(ps.profile)
	if _, taken := ps.tools[codemode.ToolName]; taken && on {
		if ps.codeFP != "" || !ps.codeWarned {
			logger.Warn("code mode's run_code is not served: a catalogue tool has that name", "tool", codemode.ToolName)
		}
		ps.codeFP, ps.codeWarned = "", true // the catalogue's replaced ours
		return
	}
	if !on {
		if ps.codeFP != "" {
			ps.srv.RemoveTools(codemode.ToolName)
			ps.codeFP = ""
		}
		return
	}
	if _, err := ps.g.codeRunner(); err != nil {
		logger.Warn("code mode's run_code is not served", "error", err)
		return
	}
	list := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if tool, ok := forClients(t.Tool); ok {
			list = append(list, tool)
		}
	}
	tool := codemode.Tool(list, ps.codeSearch() != nil, 0)
	fp := fingerprint(tool)
	if fp == ps.codeFP {
		return
	}
	ps.codeFP = fp
	ps.srv.AddTool(tool, ps.runCode)
}

// runCode serves tools/call run_code: the program runs with the profile's
// view making its inner calls. A run that fails (bad arguments, the
// plugin not loaded, over its memory or deadline) is an isError result
// saying which limit it hit, as for any tool.
func (ps *profileServer) runCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withSession(host.WithClient(ctx, clientName(req.Extra)), req.Session)
	ctx = traced(ctx, req.Params.Meta, req.Session)
	ctx, done := ps.calls.begin(ctx, req.Session, req.Extra)
	defer done()
	start := time.Now()
	if host.CorrelationID(ctx) == "" {
		// The inner calls' records name the run by it.
		ctx = host.WithCorrelationID(ctx, host.NewCorrelationID())
	}
	raw := req.Params.Arguments
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	// A run is a call of the client's: it takes a token of its rate
	// limits, as each of its inner calls does.
	var res *mcp.CallToolResult
	var err error
	if r, ok := ps.view.(interface {
		TakeRate(context.Context, string) error
	}); ok { // *host.Host, *host.View
		err = r.TakeRate(ctx, codemode.ToolName)
	}
	if err == nil {
		res, err = ps.runProgram(ctx, raw)
	}
	ps.g.h.AuditCall(ctx, ps.profile, "code_mode", codemode.ToolName, "code_mode", raw, res, err, start)
	if err != nil {
		return errorResult(err), nil
	}
	return res, nil
}

func (ps *profileServer) runProgram(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
	code, err := codemode.Args(raw)
	if err != nil {
		return nil, err
	}
	r, err := ps.g.codeRunner()
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, ps.view, ps.codeSearch(), code)
}
