package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/sandbox"
)

func (c *cli) check(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	profile := fs.String("profile", "", "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError("usage: toolhost check [--profile NAME]")
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	if *profile != "" {
		if _, ok := cfg.Profiles[*profile]; !ok {
			return c.usageError(fmt.Sprintf("no profile %q in %s: the profiles are its [profiles.NAME] tables", *profile, cfg.Path))
		}
	}
	// OCI plugins: resolve each reference (pulling what the cache lacks)
	// so that the module is checked below and its digest shown.
	oci, code := c.checkOCI(cfg)
	if code != exitOK {
		return code
	}
	// What Load leaves alone: files, commands, module memory. Nothing is
	// started.
	if err := cfg.Check(&config.CheckOptions{Module: sandbox.CheckModule, DefaultMemory: sandbox.DefaultMemory, CachedOCI: oci.cached}); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "configuration %s is valid\n", cfg.Path)
	fmt.Fprintf(c.stdout, "call timeout: %s\n", cfg.Host.CallTimeout)
	fmt.Fprintf(c.stdout, "policy: default %s, %d allow, %d deny; profiles: %s\n", cfg.Policy.Default, len(cfg.Policy.Allow), len(cfg.Policy.Deny), dash(strings.Join(sortedNames(cfg.Profiles), ", ")))
	printToolSearch(c.stdout, cfg) // tool search (search.go)
	if cfg.Host.AuditLog != "" {
		fmt.Fprintf(c.stdout, "audit log: %s\n", cfg.Host.AuditLog)
		if code := c.checkAuditKey(); code != exitOK {
			return code
		}
	}
	for _, d := range cfg.DeadAllows() {
		fmt.Fprintf(c.stdout, "note: %s can never allow anything: %s denies all it matches (deny wins)\n", d.Allow, d.Deny)
	}
	// Globs that fit no configured backend: a warning, not an error.
	for _, w := range cfg.UnmatchedGlobs() {
		fmt.Fprintf(c.stdout, "warning: %s\n", esc(w.Error()))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tKIND\tTOOL PREFIX\tTIMEOUT\tSTARTS")
	names := cfg.Backends()
	sort.Strings(names)
	for _, n := range names {
		if s, ok := cfg.Servers[n]; ok {
			prefix, timeout := prefixText(n, s.Prefix), effective(s.Timeout, cfg.Host.CallTimeout)
			if s.IsStdio() {
				fmt.Fprintf(tw, "%s\tstdio\t%s\t%s\t%s\n", n, prefix, timeout, strings.Join(append([]string{s.Command}, s.Args...), " "))
			} else {
				fmt.Fprintf(tw, "%s\thttp\t%s\t%s\t%s\n", n, prefix, timeout, redact.URL(s.URL))
			}
			continue
		}
		p := cfg.Plugins[n]
		fmt.Fprintf(tw, "%s\twasm\t%s\t%s\t%s\n", n, prefixText(n, p.Prefix), effective(p.Timeout, cfg.Host.CallTimeout), p.Path)
	}
	tw.Flush()
	// A line per backend that is disabled or described, under the table
	// (a description can be long).
	for _, n := range names {
		var on bool
		var desc string
		if s, ok := cfg.Servers[n]; ok {
			on, desc = s.IsEnabled(), s.Description
		} else {
			on, desc = cfg.Plugins[n].IsEnabled(), cfg.Plugins[n].Description
		}
		if !on {
			fmt.Fprintf(c.stdout, "backend %s: disabled (enabled = false): starts nothing and offers no tools\n", n)
		}
		if desc != "" {
			fmt.Fprintf(c.stdout, "backend %s: %s\n", n, esc(desc))
		}
	}
	for _, l := range oci.lines {
		fmt.Fprintln(c.stdout, l)
	}
	if code := c.checkSandboxes(cfg); code != exitOK {
		return code
	}
	c.checkLogins(cfg)
	for _, n := range sortedNames(cfg.Tools) {
		t := cfg.Tools[n]
		var opts []string
		if t.Retry {
			opts = append(opts, "retried when the backend fails it (retry = true)")
		}
		if t.Timeout > 0 {
			opts = append(opts, "timeout "+t.Timeout.String())
		}
		if t.MaxRetries != nil {
			opts = append(opts, fmt.Sprintf("at most %d retries", *t.MaxRetries))
		}
		if t.Backoff != (config.RetryBackoff{}) {
			first, most := t.RetryWait()
			opts = append(opts, fmt.Sprintf("backoff %v up to %v", first, most))
		}
		if len(t.Fallback) > 0 {
			opts = append(opts, "falls back to "+strings.Join(t.Fallback, ", then "))
		}
		fmt.Fprintf(c.stdout, "tool %s: %s\n", n, dash(strings.Join(opts, "; ")))
	}
	if *profile == "" {
		return exitOK
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		return c.checkProfile(ctx, h, cfg, *profile)
	})
}

// checkProfile prints the profile's effective catalogue and, for every
// other configured tool, the rule that excludes it.
func (c *cli) checkProfile(ctx context.Context, h *host.Host, cfg *config.Config, profile string) int {
	v, err := h.Profile(profile)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	code := exitOK
	for _, msg := range h.ToolOptionProblems() {
		fmt.Fprintf(c.stdout, "warning: %s\n", esc(msg))
	}
	printPinStatus(c.stdout, h) // approve.go: quarantined tools, tool-poisoning warnings
	p := cfg.Profiles[profile]
	fmt.Fprintf(c.stdout, "\nprofile %s\n", profile)
	st := map[string]host.BackendStatus{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	for _, b := range p.Requires {
		switch s := st[b]; s.State {
		case host.StateReady:
			fmt.Fprintf(c.stdout, "requires %s: ready\n", b)
		case host.StateIdle, host.StateStarting:
			// Lazy (start = "lazy"): not down, it starts at first use.
			fmt.Fprintf(c.stdout, "requires %s: %s (starts at first use)\n", b, s.State)
		default:
			fmt.Fprintf(c.stdout, "requires %s: NOT READY (%s): every call in this profile fails\n", b, notReadyWhy(s))
			code = exitCallError
		}
	}
	for _, b := range p.Recommends {
		switch s := st[b]; s.State {
		case host.StateDisabled:
			fmt.Fprintf(c.stdout, "recommends %s: warning: disabled (enabled = false): its tools are not offered\n", b)
		case host.StateReady:
		case host.StateIdle, host.StateStarting:
			fmt.Fprintf(c.stdout, "recommends %s: %s (starts at first use)\n", b, s.State)
		default:
			fmt.Fprintf(c.stdout, "recommends %s: warning: not ready (%s)\n", b, notReadyWhy(s))
		}
	}
	// An optional backend's absence is normal: its state is information,
	// never a warning.
	for _, b := range p.Optional {
		switch s := st[b]; s.State {
		case host.StateReady:
			fmt.Fprintf(c.stdout, "optional %s: ready\n", b)
		case host.StateDisabled:
			fmt.Fprintf(c.stdout, "optional %s: disabled (enabled = false)\n", b)
		case host.StateIdle, host.StateStarting:
			fmt.Fprintf(c.stdout, "optional %s: %s (starts at first use)\n", b, s.State)
		default:
			fmt.Fprintf(c.stdout, "optional %s: not ready (%s); optional: calls to other backends are not affected\n", b, notReadyWhy(s))
		}
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOOL\tBACKEND\tDECISION\tRULE")
	for _, d := range v.Decisions() {
		verdict := "allowed"
		if !d.Allowed {
			verdict = "excluded"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Backend, verdict, d.Rule)
	}
	for _, e := range h.Excluded() {
		fmt.Fprintf(tw, "(%s)\t%s\t%s\t%s\n", esc(e.Tool), e.Backend, "not registered", esc(e.Reason))
	}
	tw.Flush()
	return code
}

// notReadyWhy is a backend's last error, else its state (never empty).
func notReadyWhy(s host.BackendStatus) string {
	if s.LastError != "" {
		return esc(firstLine(s.LastError, 100))
	}
	if s.State == "" {
		return "no such backend"
	}
	return string(s.State)
}

// prefixText is config.ToolPrefix, "(none)" for no prefix.
func prefixText(name string, p *string) string {
	if t := config.ToolPrefix(name, p); t != "" {
		return t
	}
	return "(none)"
}
