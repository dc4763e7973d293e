package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

func (c *cli) tools(args []string) int {
	// Listing needs no plugin instance: plugins listed from the tool-list
	// cache are not compiled.
	c.hostOpts = func(o *host.Options) { o.LazyPluginInstances = true }
	return c.listing("tools", args, func(ctx context.Context, h *host.Host, v host.Catalogue, asJSON bool) int {
		tools, err := v.Tools(ctx)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
			return exitCallError
		}
		for _, st := range h.Status() {
			// Tools waited for backends still starting; name those it
			// gave up on, so an empty list is not taken for "no tools".
			if st.Tools == 0 && (st.State == host.StateStarting || st.State == host.StateRestarting) {
				fmt.Fprintf(c.stderr, "toolhost: backend %s is still %s; its tools are not listed\n", st.Name, st.State)
			}
		}
		// (A disabled backend, enabled = false, is not expected to be.)
		if st := enabledOnly(h.Status()); len(st) > 0 && !anyReady(st) {
			fmt.Fprintf(c.stderr, "toolhost: no tools: none of the %d backends is ready (their errors are logged above); run 'toolhost status' for their state\n", len(st))
			return exitCallError
		}
		if asJSON {
			type jsonTool struct {
				Name         string               `json:"name"`
				Backend      string               `json:"backend"`
				BackendTool  string               `json:"backend_tool"`
				Title        string               `json:"title,omitempty"`
				Description  string               `json:"description,omitempty"`
				InputSchema  any                  `json:"inputSchema"`
				OutputSchema any                  `json:"outputSchema,omitempty"`
				Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
			}
			out := make([]jsonTool, 0, len(tools))
			for _, t := range tools {
				out = append(out, jsonTool{t.Name, t.Backend, t.BackendTool, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations})
			}
			return c.printJSON(out)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBACKEND\tDESCRIPTION")
		for _, t := range tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Backend, esc(firstLine(t.Description, 70)))
		}
		tw.Flush()
		return exitOK
	})
}

// anyReady reports whether a backend of st is ready.
// enabledOnly returns st without the disabled backends.
func enabledOnly(st []host.BackendStatus) []host.BackendStatus {
	var out []host.BackendStatus
	for _, s := range st {
		if s.State != host.StateDisabled {
			out = append(out, s)
		}
	}
	return out
}

func anyReady(st []host.BackendStatus) bool {
	for _, s := range st {
		if s.State == host.StateReady {
			return true
		}
	}
	return false
}
