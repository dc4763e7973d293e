package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/sandbox"
)

// inspect loads a plugin with no capability granted and prints its ABI, tools
// and imports.
func (c *cli) inspect(args []string) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError("usage: toolhost inspect PLUGIN.wasm [--json]")
	}
	r, err := sandbox.Inspect(context.Background(), pos[0], nil)
	if err != nil && r == nil {
		fmt.Fprintf(c.stderr, "toolhost: inspect: %s\n", esc(err))
		return exitCallError
	}
	if *asJSON {
		if code := c.printJSON(r); code != exitOK {
			return code
		}
	} else {
		c.printReport(r)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: inspect: %s\n", esc(err))
		return exitCallError
	}
	return exitOK
}

// indentJSON is v as indented JSON, with <, > and & as they are (a schema
// is shown to a person, not embedded in HTML).
func indentJSON(v any, prefix string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// annotationsText lists a tool's annotations that are set, as
// "title=..., readOnlyHint=true, ..." ("" for none).
func annotationsText(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.Title != "" {
		parts = append(parts, fmt.Sprintf("title=%q", a.Title))
	}
	if a.ReadOnlyHint {
		parts = append(parts, "readOnlyHint=true")
	}
	if a.DestructiveHint != nil {
		parts = append(parts, fmt.Sprintf("destructiveHint=%v", *a.DestructiveHint))
	}
	if a.IdempotentHint {
		parts = append(parts, "idempotentHint=true")
	}
	if a.OpenWorldHint != nil {
		parts = append(parts, fmt.Sprintf("openWorldHint=%v", *a.OpenWorldHint))
	}
	return strings.Join(parts, ", ")
}

func (c *cli) printReport(r *sandbox.Report) {
	w := c.stdout
	fmt.Fprintf(w, "plugin:   %s (%d bytes, sha256 %s)\n", r.Path, r.Size, r.SHA256)
	fmt.Fprintf(w, "abi:      %s\n", dash(string(r.ABI)))
	fmt.Fprintf(w, "exports:  %s\n", esc(strings.Join(r.Exports, ", ")))
	var needs []string
	for _, n := range []struct {
		on   bool
		text string
	}{
		{r.Needs.HTTP, "http (grant allowed_hosts)"},
		{r.Needs.Files, "files (grant allowed_paths)"},
		{r.Needs.Config, "config"},
		{r.Needs.Vars, "vars"},
		{r.Needs.Logging, "logging"},
		{r.Needs.Tools, "host tools (toolhost:host/tools: granted to code mode's runner only)"},
	} {
		if n.on {
			needs = append(needs, n.text)
		}
	}
	if len(needs) == 0 {
		needs = []string{"none"}
	}
	fmt.Fprintf(w, "imports:  %s\n", esc(strings.Join(needs, ", ")))
	if len(r.ConfigKeys) > 0 {
		fmt.Fprintf(w, "config keys read while listing tools: %s\n", esc(strings.Join(r.ConfigKeys, ", ")))
	}
	if r.Resources || r.Prompts {
		fmt.Fprintf(w, "also:     resources=%v prompts=%v\n", r.Resources, r.Prompts)
	}
	fmt.Fprintf(w, "\ntools (%d):\n", len(r.Tools))
	for _, t := range r.Tools {
		fmt.Fprintf(w, "\n  %s — %s\n", esc(t.Name), esc(firstLine(t.Description, 100)))
		if t.Title != "" {
			fmt.Fprintf(w, "    title: %s\n", esc(t.Title))
		}
		if a := annotationsText(t.Annotations); a != "" {
			fmt.Fprintf(w, "    annotations: %s\n", esc(a))
		}
		fmt.Fprintf(w, "    input schema: %s\n", indentJSON(t.InputSchema, "    "))
		if t.OutputSchema != nil {
			fmt.Fprintf(w, "    output schema: %s\n", indentJSON(t.OutputSchema, "    "))
		}
	}
	fmt.Fprintf(w, "\nimported functions:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, im := range r.Imports {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", esc(im.Module), esc(im.Name), im.Signature)
	}
	tw.Flush()
}
