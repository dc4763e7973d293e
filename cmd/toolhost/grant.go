package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
)

// Grants (issue 25, item 3): toolhost grant, grants and revoke work on the
// configuration's store ([store] url, else SQLite in the user's state
// directory: openStore) through a Host whose backends are all lazy (none
// is started), so that each operation is audited as any other.

const grantUsage = `Usage: toolhost grant SUBJECT TOOL --ttl DURATION [--uses N] [--reason TEXT] [--json]

Let SUBJECT call TOOL for DURATION (and at most N times), where [tools.TOOL] grant = "required"
or "ask", or [policy] require_grant, says a call needs a grant.

  SUBJECT         a [serve.clients.NAME] or a [profiles.NAME]; client:NAME or profile:NAME when a
                  name is both
  TOOL            a catalogue name (github__delete_repo) or a glob of them (github__delete_*)
  --ttl D         how long the grant lasts, from now by the store's clock: 90s, 15m, 8h, 7d
                  (required; at most a year)
  --uses N        how many calls it allows (default: any number until it expires)
  --reason TEXT   kept with the grant and in its audit record
  --json          print the grant as JSON

The grant is written to the configuration's store ([store] url; default SQLite in
$XDG_STATE_HOME/toolhost/toolhost.db), which a toolhost serve using the same store reads at every
call. 'toolhost grants' lists the live grants, 'toolhost revoke ID' ends one.

Exit status: 0 granted; 2 usage or configuration error (also: an unknown SUBJECT, a bad TOOL or
--ttl); 3 the store could not be reached.
`

const grantsUsage = `Usage: toolhost grants [--all] [--json]

List the live grants of the configuration's store (not expired, not revoked, a use left), newest
first; --all lists every grant ever made.
`

const revokeUsage = `Usage: toolhost revoke ID [--json]

Revoke the grant ID (from 'toolhost grants'): calls no longer find it.

Exit status: 0 revoked; 2 no such grant, or revoked already; 3 the store could not be reached.
`

// withStoreHost runs f with a Host on the configuration's store whose
// backends are all lazy: nothing is started, but the Host audits.
func (c *cli) withStoreHost(f func(ctx context.Context, h *host.Host) int) int {
	return c.withStoreHostOn(nil, f)
}

// withStoreHostOn is withStoreHost on db when it is not nil (the caller's,
// which it leaves open), else on the store it opens and closes.
func (c *cli) withStoreHostOn(db *store.DB, f func(ctx context.Context, h *host.Host) int) int {
	var openEr error
	own := db == nil
	c.prepare = func(cfg *config.Config) {
		for _, s := range cfg.Servers {
			s.Start = config.StartLazy
		}
		for _, p := range cfg.Plugins {
			p.Start = config.StartLazy
		}
		if own {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			db, openEr = openStore(ctx, cfg)
		}
	}
	c.hostOpts = func(opts *host.Options) {
		if db != nil {
			opts.Store = db
		}
	}
	defer func() {
		if own && db != nil {
			db.Close()
		}
	}()
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		if openEr != nil {
			fmt.Fprintf(c.stderr, "toolhost: store: %s\n", esc(openEr))
			return exitCallError
		}
		return f(ctx, h)
	})
}

// operator names who runs the command, for a grant's created_by.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli:uid " + strconv.Itoa(os.Getuid())
}

func (c *cli) grantCmd(args []string) int {
	fs := flag.NewFlagSet("grant", flag.ContinueOnError)
	ttlText := fs.String("ttl", "", "")
	uses := fs.Int("uses", 0, "")
	reason := fs.String("reason", "", "")
	asJSON := fs.Bool("json", false, "")
	short := "usage: toolhost grant SUBJECT TOOL --ttl DURATION [--uses N] [--reason TEXT] [--json]"
	pos, err := parse(fs, args)
	if err != nil {
		return c.helpOr(err, grantUsage, short)
	}
	if len(pos) != 2 {
		return c.usageError(short)
	}
	if *ttlText == "" {
		return c.usageError("toolhost grant needs --ttl (how long the grant lasts: 15m, 8h, 7d)")
	}
	var ttl config.Duration
	if err := ttl.UnmarshalText([]byte(*ttlText)); err != nil || ttl <= 0 {
		return c.usageError(fmt.Sprintf("--ttl %q is not a positive duration (like 90s, 15m, 8h, 7d)", *ttlText))
	}
	if *uses < 0 {
		return c.usageError("--uses must be at least 1 (leave it out for any number)")
	}
	return c.withStoreHost(func(ctx context.Context, h *host.Host) int {
		g, err := h.CreateGrant(ctx, host.GrantRequest{Subject: pos[0], Tool: pos[1], TTL: ttl.Std(), Uses: *uses, Reason: *reason, CreatedBy: operator()})
		if err != nil {
			return c.grantError(err)
		}
		if *asJSON {
			return c.printJSON(g)
		}
		fmt.Fprintf(c.stdout, "granted %s: %s %s may call %s until %s (%s)\n", g.ID, g.SubjectKind, esc(g.Subject), esc(g.Tool),
			g.Expires.Local().Format(time.RFC3339), usesText(g.UsesLeft))
		return exitOK
	})
}

func (c *cli) grantsCmd(args []string) int {
	fs := flag.NewFlagSet("grants", flag.ContinueOnError)
	all := fs.Bool("all", false, "")
	asJSON := fs.Bool("json", false, "")
	short := "usage: toolhost grants [--all] [--json]"
	pos, err := parse(fs, args)
	if err != nil {
		return c.helpOr(err, grantsUsage, short)
	}
	if len(pos) != 0 {
		return c.usageError(short)
	}
	return c.withStoreHost(func(ctx context.Context, h *host.Host) int {
		gs, err := h.Grants(ctx, *all)
		if err != nil {
			return c.grantError(err)
		}
		if *asJSON {
			if gs == nil {
				gs = []*store.Grant{}
			}
			return c.printJSON(gs)
		}
		if len(gs) == 0 {
			fmt.Fprintln(c.stdout, "no live grants")
			return exitOK
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSUBJECT\tTOOL\tEXPIRES\tUSES LEFT\tSTATE\tBY\tREASON")
		for _, g := range gs {
			state := "live"
			switch {
			case g.Revoked != nil:
				state = "revoked"
			case g.UsesLeft != nil && *g.UsesLeft <= 0:
				state = "spent"
			case !g.Expires.After(time.Now()):
				state = "expired"
			}
			uses := "any"
			if g.UsesLeft != nil {
				uses = strconv.Itoa(*g.UsesLeft)
			}
			fmt.Fprintf(tw, "%s\t%s:%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.SubjectKind, esc(g.Subject), esc(g.Tool),
				g.Expires.Local().Format(time.RFC3339), uses, state, esc(g.CreatedBy), esc(firstLine(g.Reason, 60)))
		}
		tw.Flush()
		return exitOK
	})
}

func (c *cli) revokeCmd(args []string) int {
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	short := "usage: toolhost revoke ID [--json]"
	pos, err := parse(fs, args)
	if err != nil {
		return c.helpOr(err, revokeUsage, short)
	}
	if len(pos) != 1 {
		return c.usageError(short)
	}
	return c.withStoreHost(func(ctx context.Context, h *host.Host) int {
		g, err := h.RevokeGrant(ctx, pos[0])
		if err != nil {
			return c.grantError(err)
		}
		if *asJSON {
			return c.printJSON(g)
		}
		fmt.Fprintf(c.stdout, "revoked %s (%s %s, %s)\n", g.ID, g.SubjectKind, esc(g.Subject), esc(g.Tool))
		return exitOK
	})
}

// grantError prints err of a grant command and returns its exit status.
func (c *cli) grantError(err error) int {
	fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
	if errors.Is(err, host.ErrStoreUnavailable) {
		return exitCallError
	}
	return exitUsage
}

// usesText says how many uses a grant has left.
func usesText(n *int) string {
	switch {
	case n == nil:
		return "any number of calls"
	case *n == 1:
		return "1 call"
	}
	return strconv.Itoa(*n) + " calls"
}
