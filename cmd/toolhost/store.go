package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	neturl "net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

const storeUsage = `Usage: toolhost store migrate | check

The store keeps the audit trail, grants, rate limits, idempotency results, tool pins and
circuit breakers: [store] url, else SQLite in $XDG_STATE_HOME/toolhost/toolhost.db.

  migrate   apply the pending schema migrations and list them (toolhost serve applies
            them at start too)
  check     print the engine, the URL (without a password), the schema version and
            the pending migrations, changing nothing; for SQLite, first read the
            whole file (PRAGMA quick_check, seconds per GB; toolhost serve reads
            only its header at start); exit status 3 for a store that cannot be
            reached, a damaged SQLite file or a schema newer than this toolhost,
            2 for a bad [store] url
`

// storeConfig returns the configuration of the commands that only read the
// store (store, audit): the configuration file when there is one, else
// nil (the default store). An invalid file is an error (exit status 2).
func (c *cli) storeConfig() (*config.Config, int) {
	path := c.configFile()
	if c.configPath == "" && os.Getenv("TOOLHOST_CONFIG") == "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, exitOK
		}
	}
	return c.loadConfig()
}

// storeExit is the exit status of a store that could not be opened: 2 for
// a bad URL (configuration), else 3.
func storeExit(err error) int {
	if errors.Is(err, store.ErrURL) {
		return exitUsage
	}
	return exitCallError
}

// storeCmd runs toolhost store migrate|check.
func (c *cli) storeCmd(args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(c.stdout, storeUsage)
		return exitOK
	}
	if len(args) != 1 || (args[0] != "migrate" && args[0] != "check") {
		return c.usageError("usage: toolhost store migrate | check")
	}
	cfg, code := c.storeConfig()
	if code != exitOK {
		return code
	}
	url, err := storeURL(cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, url, store.Options{NoMigrate: true})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: store: %s\n", esc(err))
		return storeExit(err)
	}
	defer db.Close()
	if args[0] == "migrate" {
		ms, err := db.Migrate(ctx)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: store: %s\n", esc(err))
			return exitCallError
		}
		if len(ms) == 0 {
			fmt.Fprintf(c.stdout, "store %s: schema is current, nothing to apply\n", esc(db))
		}
		for _, m := range ms {
			fmt.Fprintf(c.stdout, "applied %05d %s (%s)\n", m.Version, esc(m.Name), m.Duration.Round(time.Millisecond))
		}
		return exitOK
	}
	r, err := db.Check(ctx)
	if r != nil {
		pending := "none"
		if len(r.Pending) > 0 {
			var ps []string
			for _, p := range r.Pending {
				ps = append(ps, fmt.Sprint(p))
			}
			pending = strings.Join(ps, ", ") + " (toolhost store migrate, or toolhost serve, applies them)"
		}
		fmt.Fprintf(c.stdout, "engine:  %s\nurl:     %s\nversion: %d (this toolhost knows up to %d)\npending: %s\n",
			r.Engine, esc(r.URL), r.Version, r.Latest, pending)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: store: %s\n", esc(err))
		return exitCallError
	}
	return exitOK
}

// serveStore opens the store of toolhost serve ([store] url, else the
// default file) for opts.Store, and returns the function that closes it
// (after the Host). A store that cannot be opened fails the start (exit
// status 2, the error naming the URL) unless [store] required = false:
// then a warning, and the host keeps its state in memory (status shows
// mode "memory").
func (c *cli) serveStore(ctx context.Context, cfg *config.Config, opts *host.Options) (closeStore func(), code int) {
	url, err := storeURL(cfg)
	if err == nil {
		var db *store.DB
		if db, err = store.Open(ctx, url, store.Options{}); err == nil {
			opts.Store = db
			return func() { db.Close() }, exitOK
		}
	}
	if cfg.Store.IsRequired() {
		fmt.Fprintf(c.stderr, "toolhost: the store %s cannot be opened: %s\n(fix [store] url, or set [store] required = false to run with state in memory only)\n", esc(redactedURL(url)), esc(err))
		return nil, exitUsage
	}
	fmt.Fprintf(c.stderr, "toolhost: warning: the store %s cannot be opened, state is kept in memory only until a restart: %s\n", esc(redactedURL(url)), esc(err))
	db, merr := store.Open(ctx, "sqlite::memory:", store.Options{})
	if merr != nil {
		fmt.Fprintf(c.stderr, "toolhost: the in-memory store cannot be opened either: %s\n", esc(merr))
		return nil, exitUsage
	}
	opts.Store = db
	return func() { db.Close() }, exitOK
}

// printStoreStatus prints the store line of toolhost status.
func printStoreStatus(w *tabwriter.Writer, st host.StoreStatus) {
	fmt.Fprintf(w, "store: %s %s (%s)", dash(st.Engine), esc(dash(st.URL)), st.Mode)
	if st.Audit {
		fmt.Fprintf(w, ", audit queued %d written %d dropped %d", st.Queued, st.Written, st.Dropped)
	}
	if st.LastError != "" {
		fmt.Fprintf(w, ", last error: %s", esc(st.LastError))
	}
	fmt.Fprintln(w)
	w.Flush()
}

// auditQuery is toolhost audit [filters]: the audit rows of the store,
// newest first.
func (c *cli) auditQuery(args []string) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	var f store.AuditFilter
	fs.StringVar(&f.Tool, "tool", "", "")
	fs.StringVar(&f.Client, "client", "", "")
	fs.StringVar(&f.Outcome, "outcome", "", "")
	fs.StringVar(&f.Backend, "backend", "", "")
	fs.StringVar(&f.Op, "op", "", "")
	fs.StringVar(&f.CorrelationID, "correlation", "", "")
	since := fs.String("since", "", "")
	until := fs.String("until", "", "")
	limit := fs.Int("limit", store.DefaultAuditLimit, "")
	asJSON := fs.Bool("json", false, "")
	const use = "usage: toolhost audit [--tool GLOB] [--client C] [--outcome O] [--backend B] [--op OP] [--since D|TIME] [--until D|TIME] [--correlation ID] [--limit N] [--json]"
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 || *limit < 1 {
		return c.usageError(use)
	}
	now := time.Now()
	for _, t := range []struct {
		flag, s string
		into    *time.Time
	}{{"since", *since, &f.Since}, {"until", *until, &f.Until}} {
		if t.s == "" {
			continue
		}
		tm, err := parseSince(t.s, now)
		if err != nil {
			return c.usageError(fmt.Sprintf("--%s %q: %v", t.flag, t.s, err))
		}
		*t.into = tm
	}
	cfg, code := c.storeConfig()
	if code != exitOK {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := openStore(ctx, cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: store: %s\n", esc(err))
		return storeExit(err)
	}
	defer db.Close()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "TIME\tCLIENT\tPROFILE\tTOOL/OP\tBACKEND\tDECISION\tOUTCOME\tATTEMPTS\tMS\tCORRELATION")
	}
	left := *limit
	for left > 0 {
		f.Limit = min(left, store.MaxAuditLimit)
		rows, next, err := db.QueryAudit(ctx, f)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: audit: %s\n", esc(err))
			if errors.Is(err, store.ErrFilter) {
				return exitUsage
			}
			return exitCallError
		}
		for _, r := range rows {
			if *asJSON {
				c.stdout.Write(append(r.Record, '\n'))
				continue
			}
			what := r.Tool
			if r.Op != "" {
				what = r.Op
				if r.Tool != "" {
					what += " " + r.Tool
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"),
				esc(dash(r.Client)), esc(dash(r.Profile)), esc(dash(what)), esc(dash(r.Backend)), esc(r.Decision), esc(r.Outcome),
				r.Attempts, r.LatencyMS, esc(dash(r.CorrelationID)))
		}
		left -= len(rows)
		if next == "" {
			break
		}
		f.Cursor = next
	}
	tw.Flush()
	return exitOK
}

// parseSince reads --since/--until: a duration back from now ("15m",
// "36h", "7d") or a time (RFC 3339, or "2006-01-02" as UTC midnight).
func parseSince(s string, now time.Time) (time.Time, error) {
	var d config.Duration
	if err := d.UnmarshalText([]byte(s)); err == nil && d.Std() >= 0 {
		return now.Add(-d.Std()), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("give a duration back from now (15m, 36h, 7d) or a time (2026-11-27T05:00:00Z, 2026-11-27)")
}

// redactedURL returns a store URL without its password.
func redactedURL(u string) string {
	if p, err := neturl.Parse(u); err == nil && p.User != nil {
		return p.Redacted()
	}
	return u
}
