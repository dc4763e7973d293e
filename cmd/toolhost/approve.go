package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

const approveUsage = `Usage: toolhost approve [BACKEND|TOOL ...] [--all] [--diff] [--json]

Tool-definition pinning (README, "Tool pinning"; [host] pin or a backend's pin): a tool whose
definition (name, title, description, input and output schema, annotations) changed since it
was approved, or, with pin = "approve", was never approved, is quarantined: left out of
tools/list, its calls refused, until it is approved here. The store of the configuration
([store] url) holds both definitions, so no backend is started; a running toolhost serve
releases the tool within 5 seconds.

  (no argument)    list the tools whose definition waits for approval
  BACKEND|TOOL     approve what waits of these backends (every tool of each) or tools
  --all            approve everything that waits
  --diff           show each waiting definition against the approved one, field by field
                   (a unified diff of the pretty JSON); approves nothing: review, then approve
  --json           the list as JSON

Exit status: 0 ok, 2 usage or configuration error, 3 the store could not be opened, or a
BACKEND|TOOL has nothing waiting, or its definition changed again while being approved.
`

// approveCmd runs toolhost approve (see approveUsage).
func (c *cli) approveCmd(args []string) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	all := fs.Bool("all", false, "")
	diff := fs.Bool("diff", false, "")
	asJSON := fs.Bool("json", false, "")
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(c.stdout, approveUsage)
		return exitOK
	}
	sel, err := parse(fs, args)
	if err != nil || (*all && len(sel) > 0) {
		return c.usageError("usage: toolhost approve [BACKEND|TOOL ...] [--all] [--diff] [--json]")
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := openStore(ctx, cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitCallError
	}
	defer db.Close()
	pins, err := db.Pins(ctx)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitCallError
	}
	var waiting []store.Pin
	for _, p := range pins {
		if p.Pending() {
			waiting = append(waiting, p)
		}
	}
	code = exitOK
	if len(sel) > 0 {
		var chosen []store.Pin
		for _, s := range sel {
			n := 0
			for _, p := range waiting {
				if p.Tool == s || p.Backend == s {
					chosen = append(chosen, p)
					n++
				}
			}
			if n == 0 {
				fmt.Fprintf(c.stderr, "toolhost: %s: no definition waits for approval (no such tool or backend in the store, or nothing changed)\n", esc(s))
				code = exitCallError
			}
		}
		waiting = chosen
	}
	switch {
	case *asJSON:
		if waiting == nil {
			waiting = []store.Pin{}
		}
		if code := c.printJSON(pinsJSON(waiting)); code != exitOK {
			return code
		}
	case *diff:
		for _, p := range waiting {
			printPinDiff(c.stdout, p)
		}
	case len(sel) == 0 && !*all:
		printWaiting(c.stdout, waiting, cfg)
	}
	if *diff || len(sel) == 0 && !*all {
		return code
	}
	return c.approvePins(db, waiting, operator(), *asJSON, code)
}

// approvePins approves each of waiting through a Host whose backends stay
// stopped (Host.ApproveTool, on db), so that every approval is audited as
// the REST API's is: an "admin/approve_tool" record and log line naming
// the tool, with by as its client. code is the exit status so far.
func (c *cli) approvePins(db *store.DB, waiting []store.Pin, by string, quiet bool, code int) int {
	if len(waiting) == 0 {
		return code
	}
	return c.withStoreHostOn(db, func(ctx context.Context, h *host.Host) int {
		ctx = host.WithClient(ctx, by)
		for _, p := range waiting {
			err := h.ApproveTool(ctx, p.Tool, p.PendingHash, by)
			switch {
			case errors.Is(err, host.ErrNothingToApprove):
				fmt.Fprintf(c.stderr, "toolhost: %s: its definition changed again (or was approved) since it was read; run toolhost approve --diff again\n", esc(p.Tool))
				code = exitCallError
			case err != nil:
				fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
				code = exitCallError
			case !quiet:
				fmt.Fprintf(c.stdout, "approved %s (%s, sha256 %s)\n", esc(p.Tool), esc(p.Backend), p.PendingHash[:min(12, len(p.PendingHash))])
			}
		}
		return code
	})
}

// pinJSON is one waiting definition in approve --json.
type pinJSON struct {
	Tool              string          `json:"tool"`
	Backend           string          `json:"backend"`
	Hash              string          `json:"hash,omitempty"`
	Definition        json.RawMessage `json:"definition,omitempty"`
	ApprovedAt        *time.Time      `json:"approved_at,omitempty"`
	ApprovedBy        string          `json:"approved_by,omitempty"`
	PendingHash       string          `json:"pending_hash"`
	PendingDefinition json.RawMessage `json:"pending_definition"`
	PendingSince      *time.Time      `json:"pending_since,omitempty"`
	Fields            []string        `json:"fields,omitempty"`
}

func pinsJSON(ps []store.Pin) []pinJSON {
	out := make([]pinJSON, 0, len(ps))
	raw := func(s string) json.RawMessage {
		if s == "" || !json.Valid([]byte(s)) {
			return nil
		}
		return json.RawMessage(s)
	}
	for _, p := range ps {
		j := pinJSON{Tool: p.Tool, Backend: p.Backend, Hash: p.Hash, Definition: raw(p.Definition), ApprovedBy: p.ApprovedBy,
			PendingHash: p.PendingHash, PendingDefinition: raw(p.PendingDefinition)}
		if !p.ApprovedAt.IsZero() {
			j.ApprovedAt = &p.ApprovedAt
		}
		if !p.PendingSince.IsZero() {
			j.PendingSince = &p.PendingSince
		}
		if p.Approved() {
			j.Fields = host.ChangedFields([]byte(p.Definition), []byte(p.PendingDefinition))
		}
		out = append(out, j)
	}
	return out
}

// printWaiting prints the table of definitions waiting for approval.
func printWaiting(w io.Writer, ps []store.Pin, cfg *config.Config) {
	if len(ps) == 0 {
		fmt.Fprintln(w, "nothing waits for approval")
		if !cfg.PinsOn() {
			fmt.Fprintln(w, `(pinning is off in this configuration: set [host] pin = "trust-first" or "approve")`)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tBACKEND\tWAITS SINCE\tWHAT")
	for _, p := range ps {
		what := "new: never approved"
		if p.Approved() {
			what = strings.Join(host.ChangedFields([]byte(p.Definition), []byte(p.PendingDefinition)), ", ") + " changed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(p.Tool), esc(p.Backend), p.PendingSince.Format(time.RFC3339), what)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nReview with toolhost approve --diff [TOOL], then approve with toolhost approve TOOL|BACKEND ... or --all.")
}

// printPinDiff prints p's pending definition against its approved one, one
// hunk per changed field, every line escaped for the terminal.
func printPinDiff(w io.Writer, p store.Pin) {
	approved := "never approved"
	if p.Approved() {
		approved = fmt.Sprintf("approved by %s at %s", p.ApprovedBy, p.ApprovedAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "--- %s (%s)\n", safeLine(p.Tool), safeLine(approved))
	fmt.Fprintf(w, "+++ %s (backend %s, waiting since %s)\n", safeLine(p.Tool), safeLine(p.Backend), p.PendingSince.Format(time.RFC3339))
	var old, cur map[string]json.RawMessage
	_ = json.Unmarshal([]byte(p.Definition), &old)
	_ = json.Unmarshal([]byte(p.PendingDefinition), &cur)
	for _, f := range host.DefinitionFields {
		if bytes.Equal(old[f], cur[f]) {
			continue
		}
		fmt.Fprintf(w, "@@ %s @@\n", f)
		for _, l := range diffLines(prettyLines(old[f]), prettyLines(cur[f])) {
			fmt.Fprintln(w, safeLine(l))
		}
	}
	// What the new description says to the model (host/poison.go).
	var def struct {
		Description string `json:"description"`
		Title       string `json:"title"`
	}
	_ = json.Unmarshal([]byte(p.PendingDefinition), &def)
	for _, msg := range host.ScanToolText(def.Description, true) {
		fmt.Fprintf(w, "warning: description: %s\n", safeLine(msg))
	}
	for _, msg := range host.ScanToolText(def.Title, false) {
		fmt.Fprintf(w, "warning: title: %s\n", safeLine(msg))
	}
	fmt.Fprintln(w)
}

// prettyLines returns raw (JSON) indented, as lines; none for nothing.
func prettyLines(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return []string{string(raw)}
	}
	return strings.Split(b.String(), "\n")
}

// diffLines returns the lines of a and b as a unified diff's body: common
// lines prefixed " ", removed "-", added "+" (a longest common
// subsequence; definitions are small, and each side is capped).
func diffLines(a, b []string) []string {
	const maxLines = 2000
	if len(a) > maxLines || len(b) > maxLines {
		out := make([]string, 0, len(a)+len(b))
		for _, l := range a {
			out = append(out, "-"+l)
		}
		for _, l := range b {
			out = append(out, "+"+l)
		}
		return out
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, " "+a[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "-"+a[i])
			i++
		default:
			out = append(out, "+"+b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, "-"+a[i])
	}
	for ; j < len(b); j++ {
		out = append(out, "+"+b[j])
	}
	return out
}

// safeLine is esc for one line, with the invisible Unicode tag characters
// (U+E0000-U+E007F, which can smuggle text to a model) shown too.
func safeLine(s string) string {
	s = esc(s)
	if !strings.ContainsFunc(s, isTagRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isTagRune(r) {
			fmt.Fprintf(&b, `\U%08x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isTagRune(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

// printPinStatus prints the tools quarantined by pinning and the
// tool-poisoning warnings of h (toolhost status, check --profile).
func printPinStatus(w io.Writer, h *host.Host) { printQuarantine(w, h.Quarantined(), h.ToolWarnings()) }

// printQuarantine prints the quarantined tools q as a table and the
// tool-poisoning warnings, every string escaped for the terminal.
func printQuarantine(w io.Writer, q []host.QuarantinedTool, warnings []string) {
	if len(q) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "QUARANTINED TOOL\tBACKEND\tWHY")
		for _, t := range q {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", esc(t.Name), esc(t.Backend), esc(t.Reason))
		}
		tw.Flush()
	}
	for _, msg := range warnings {
		fmt.Fprintf(w, "warning: %s\n", safeLine(msg))
	}
}

// pinStore gives the Host of a command the configuration's store when it
// has a [store] url, pinning is on, a tool needs a grant or one is
// idempotent (so that pins
// written by trust-first, approvals made by toolhost approve, grants made
// by toolhost grant and stored results are the ones every command and
// serve see: without it the Host would keep them in memory), unless opts
// has one already. It returns what closes it once the Host is closed,
// or an exit status: a store that cannot be opened fails the command when
// [store] required (the default), else it is a warning and the Host keeps
// its pins in memory.
func (c *cli) pinStore(ctx context.Context, cfg *config.Config, opts *host.Options) (func(), int) {
	if opts.Store != nil || !(cfg.Store.URL != "" || cfg.PinsOn() || cfg.NeedsGrants() || hasIdempotent(cfg)) {
		return func() {}, exitOK
	}
	db, err := openStore(ctx, cfg)
	if err != nil {
		if cfg.Store.IsRequired() {
			fmt.Fprintf(c.stderr, "toolhost: the store (tool pins, grants, idempotency) cannot be opened: %s\n", esc(err))
			return nil, exitUsage
		}
		fmt.Fprintf(c.stderr, "toolhost: warning: the store cannot be opened ([store] required = false): tool pins, grants and stored results are kept in memory only: %s\n", esc(err))
		return func() {}, exitOK
	}
	opts.Store = db
	return func() { db.Close() }, exitOK
}

// hasIdempotent reports whether a [tools.NAME] table says idempotent.
func hasIdempotent(cfg *config.Config) bool {
	for _, t := range cfg.Tools {
		if t.Idempotent {
			return true
		}
	}
	return false
}
