package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/host"
)

func (c *cli) status(args []string) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	watch := fs.Duration("watch", 0, "")
	rawURL, tokenEnv := remoteFlags(fs)
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 || *watch < 0 {
		return c.usageError("usage: toolhost status [--json] [--watch INTERVAL] [--url URL [--token-env VAR]]")
	}
	if *rawURL != "" {
		// A running serve's status (remote.go), not backends of our own.
		r, code := c.newRemote(*rawURL, *tokenEnv)
		if r == nil {
			return code
		}
		return c.remoteStatus(r, *asJSON, *watch)
	}
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		// One health check of every ready backend first, so that HEALTH
		// says something about a host that has only just started.
		checkAll(ctx, h)
		for {
			st := h.Status()
			if *asJSON {
				if code := c.printJSON(st); code != exitOK {
					return code
				}
			} else {
				printStatus(c.stdout, st)
				if ss := h.StoreStatus(); ss.URL != "" { // a configured store (store.go)
					printStoreStatus(tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0), ss)
				}
				printPinStatus(c.stdout, h) // approve.go
			}
			if *watch == 0 {
				return exitOK
			}
			select {
			case <-ctx.Done():
				return exitOK
			case <-time.After(*watch):
				if !*asJSON {
					fmt.Fprintln(c.stdout)
				}
			}
		}
	})
}

// checkAll runs one health check of every ready backend, concurrently;
// the results land in h.Status.
func checkAll(ctx context.Context, h *host.Host) {
	var wg sync.WaitGroup
	for _, st := range h.Status() {
		if st.State == host.StateReady && st.Health != host.HealthOff {
			wg.Go(func() { _ = h.CheckHealth(ctx, st.Name) })
		}
	}
	wg.Wait()
}

// printStatus prints one line per backend.
func printStatus(w io.Writer, st []host.BackendStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tKIND\tSANDBOX\tSTATE\tPID\tUPTIME\tRESTARTS\tHEALTH\tCIRCUIT\tTOOLS\tLAST ERROR")
	for _, s := range st {
		pid, uptime := "-", "-"
		if s.Pid > 0 {
			pid = fmt.Sprint(s.Pid)
		}
		if s.State == host.StateReady {
			uptime = (time.Duration(s.UptimeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		if s.State == host.StateRestarting && !s.NextRestart.IsZero() { // zero: lost just now, not yet scheduled
			uptime = "next in " + time.Until(s.NextRestart).Round(100*time.Millisecond).String()
		}
		health := s.Health
		if s.HealthFailures > 0 {
			health = fmt.Sprintf("%s (%d)", health, s.HealthFailures)
		}
		circuit := s.Circuit
		if len(s.OpenTools) > 0 {
			circuit += fmt.Sprintf(" (%d tools open)", len(s.OpenTools))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n", s.Name, s.Kind, sandboxText(s), s.State, pid, uptime, s.Restarts, health, circuit, s.Tools, dash(esc(firstLine(s.LastError, 100))))
	}
	tw.Flush()
	for _, l := range denialLines(st) {
		fmt.Fprintln(w, l)
	}
	// Where each OCI plugin's module came from (ociplugin.Result.Status).
	for _, s := range st {
		if s.Source != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, esc(s.Source))
		}
	}
}
