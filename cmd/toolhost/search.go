package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolhost/toolhost/config"
)

// printToolSearch prints the catalogue mode of toolhost serve (issue 27:
// [serve] catalogue and always) and of each profile that differs from it.
func printToolSearch(w io.Writer, cfg *config.Config) {
	line := func(ts config.ToolSearch) string {
		if ts.Catalogue != config.CatalogueSearch {
			return ts.Catalogue + " (every allowed tool is listed)"
		}
		return "search (search_tools, call_tool; always listed: " + dash(strings.Join(ts.Always, ", ")) + ")"
	}
	serve := line(cfg.ToolSearchOf(""))
	fmt.Fprintf(w, "catalogue: %s\n", serve)
	for _, n := range sortedNames(cfg.Profiles) {
		if l := line(cfg.ToolSearchOf(n)); l != serve {
			fmt.Fprintf(w, "catalogue of profile %s: %s\n", n, l)
		}
	}
}
