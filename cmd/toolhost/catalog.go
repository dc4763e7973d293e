package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/termsafe"
)

// The prompts, prompt, resources and read commands: a backend's prompts and
// resources, as the policy (or a profile) allows them.

// denied reports whether err is a refusal by the policy (exit status 4).
func denied(err error) bool {
	return errors.Is(err, host.ErrToolNotAllowed) || errors.Is(err, host.ErrPromptNotAllowed) || errors.Is(err, host.ErrResourceNotAllowed)
}

// failed prints err as the failure of what and returns its exit status.
func (c *cli) failed(what string, err error) int {
	if denied(err) {
		fmt.Fprintf(c.stderr, "toolhost: %s denied: %s\n", what, esc(err))
		return exitDenied
	}
	fmt.Fprintf(c.stderr, "toolhost: %s failed: %s\n", what, esc(err))
	return exitCallError
}

func (c *cli) prompts(args []string) int {
	return c.listing("prompts", args, func(ctx context.Context, _ *host.Host, v host.Catalogue, asJSON bool) int {
		ps, err := v.Prompts(ctx)
		if err != nil {
			return c.failed("prompts/list", err)
		}
		if asJSON {
			type jsonPrompt struct {
				*mcp.Prompt
				Backend       string `json:"backend"`
				BackendPrompt string `json:"backend_prompt"`
			}
			out := make([]jsonPrompt, 0, len(ps))
			for _, p := range ps {
				out = append(out, jsonPrompt{p.Prompt, p.Backend, p.BackendPrompt})
			}
			return c.printJSON(out)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBACKEND\tARGUMENTS\tDESCRIPTION")
		for _, p := range ps {
			var as []string
			for _, a := range p.Arguments {
				if a.Required {
					as = append(as, a.Name)
				} else {
					as = append(as, "["+a.Name+"]")
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(p.Name), p.Backend, esc(dash(strings.Join(as, " "))), esc(firstLine(p.Description, 60)))
		}
		tw.Flush()
		return exitOK
	})
}

func (c *cli) prompt(args []string) int {
	fs := flag.NewFlagSet("prompt", flag.ContinueOnError)
	argJSON := fs.String("args", "{}", "")
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError(`usage: toolhost prompt NAME [--args '{"argument":"value"}'] [--profile NAME] [--json]`)
	}
	var pargs map[string]string
	if err := json.Unmarshal([]byte(*argJSON), &pargs); err != nil {
		return c.usageError(fmt.Sprintf("--args must be a JSON object of strings (prompt arguments are strings): %v", err))
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		res, err := v.GetPrompt(ctx, pos[0], pargs)
		if err != nil {
			return c.failed("prompts/get", err)
		}
		if *asJSON {
			return c.printJSON(res)
		}
		for _, m := range res.Messages {
			fmt.Fprintf(c.stdout, "%s: ", m.Role)
			printContent(c.stdout, m.Content)
		}
		return exitOK
	})
}

func (c *cli) resources(args []string) int {
	return c.listing("resources", args, func(ctx context.Context, _ *host.Host, v host.Catalogue, asJSON bool) int {
		rs, err := v.Resources(ctx)
		if err != nil {
			return c.failed("resources/list", err)
		}
		if asJSON {
			type jsonResource struct {
				*mcp.Resource
				Backend string `json:"backend"`
			}
			out := make([]jsonResource, 0, len(rs))
			for _, r := range rs {
				out = append(out, jsonResource{r.Resource, r.Backend})
			}
			return c.printJSON(out)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "URI\tBACKEND\tMIME TYPE\tNAME")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(r.URI), r.Backend, esc(dash(r.MIMEType)), esc(firstLine(r.Name, 60)))
		}
		tw.Flush()
		return exitOK
	})
}

func (c *cli) read(args []string) int {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	backend := fs.String("backend", "", "")
	asJSON := fs.Bool("json", false, "")
	profile := fs.String("profile", "", "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError("usage: toolhost read URI [--backend NAME] [--profile NAME] [--json]")
	}
	uri := pos[0]
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		v, code := c.view(h, *profile)
		if v == nil {
			return code
		}
		if *backend == "" {
			// The backend that lists uri; a URI no backend lists (a
			// template's, say) needs --backend.
			rs, err := v.Resources(ctx)
			if err != nil {
				return c.failed("resources/list", err)
			}
			var from []string
			for _, r := range rs {
				if r.URI == uri {
					from = append(from, r.Backend)
				}
			}
			sort.Strings(from)
			switch len(from) {
			case 0:
				fmt.Fprintf(c.stderr, "toolhost: no backend lists resource %q (see toolhost resources); name its backend with --backend NAME\n", uri)
				return exitCallError
			case 1:
				*backend = from[0]
			default:
				return c.usageError(fmt.Sprintf("resource %q is listed by %s: choose one with --backend NAME", uri, strings.Join(from, ", ")))
			}
		}
		res, err := v.ReadResource(ctx, *backend, uri)
		if err != nil {
			return c.failed("resources/read", err)
		}
		if *asJSON {
			return c.printJSON(res)
		}
		for _, rc := range res.Contents {
			if rc.Blob != nil {
				fmt.Fprintf(c.stdout, "[%s: %s, %d bytes]\n", esc(rc.URI), esc(dash(rc.MIMEType)), len(rc.Blob))
				continue
			}
			if isTerminal(c.stdout) {
				fmt.Fprintln(c.stdout, termsafe.Text(rc.Text))
			} else {
				fmt.Fprintln(c.stdout, rc.Text)
			}
		}
		return exitOK
	})
}

// printContent writes one content block for a person, as printResult does
// (escaped on a terminal).
func printContent(w io.Writer, ct mcp.Content) {
	printResult(w, &mcp.CallToolResult{Content: []mcp.Content{ct}}, isTerminal(w))
}
