package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
)

// serve runs the MCP gateway: the catalogue as an MCP server on stdio or
// Streamable HTTP, until the client disconnects (stdio) or SIGINT/SIGTERM.
func (c *cli) serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	stdio := fs.Bool("stdio", false, "")
	listen := fs.String("listen", "", "")
	profile := fs.String("profile", "", "")
	allowUnauth := fs.Bool("allow-unauthenticated", false, "")
	watch := fs.Bool("watch", false, "")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 || (*stdio && *listen != "") {
		return c.usageError("usage: toolhost serve [--stdio | --listen ADDR] [--profile NAME] [--allow-unauthenticated] [--watch]")
	}
	metrics := gateway.NewMetrics()
	c.serving = metrics
	// Reload without restart (reload.go): POST /api/v1/reload, SIGHUP and,
	// with --watch, a change of the file. The file's bytes are hashed
	// before withHost loads it, so that --watch sees a change made while
	// the backends start; a SIGHUP during the start is kept (instead of
	// killing serve) and reloads once the gateway serves.
	rl := newReloader(c.configFile(), nil, c.logger.Named("reload"))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		rl.h = h
		g, err := gateway.New(h, &gateway.Options{Logger: c.logger.Named("gateway"), Profile: *profile, AllowUnauthenticated: *allowUnauth, Metrics: metrics,
			Reload: rl.reload, // POST /api/v1/reload, SIGHUP, --watch
			Logs:   h.Logs})   // GET /api/v1/servers/{name}/logs
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: %v\n", err)
			if errors.Is(err, host.ErrUnknownProfile) {
				return exitUsage
			}
			return exitCallError
		}
		defer g.Close()
		defer rl.onSignal(ctx, hup)()
		if *watch {
			stop, err := rl.watch(ctx, watchDebounce)
			if err != nil {
				fmt.Fprintf(c.stderr, "toolhost: serve: %s\n", esc(err))
				return exitUsage
			}
			defer stop()
		}
		if *stdio {
			// stdout carries the protocol only: logs and warnings go to
			// stderr.
			err := g.ServeTransport(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{c.stdout}})
			if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
				fmt.Fprintf(c.stderr, "toolhost: serve: %v\n", err)
				return exitCallError
			}
			return exitOK
		}
		addr := *listen
		if addr == "" {
			addr = c.cfg.Serve.Listen
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: serve: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(c.stderr, "toolhost: serving MCP (Streamable HTTP) at http://%s/mcp\n", ln.Addr())
		fmt.Fprintf(c.stderr, "toolhost: dashboard at http://%s/, REST API at http://%s/api/v1 (OpenAPI: /api/v1/openapi.json)\n", ln.Addr(), ln.Addr())
		if err := g.Serve(ctx, ln); err != nil {
			fmt.Fprintf(c.stderr, "toolhost: serve: %v\n", err)
			if errors.Is(err, gateway.ErrUnauthenticated) {
				return exitUsage
			}
			return exitCallError
		}
		return exitOK
	})
}

// nopCloser is an io.WriteCloser whose Close does nothing: the gateway
// must not close the CLI's stdout.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
