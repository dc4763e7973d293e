package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

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
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 || (*stdio && *listen != "") {
		return c.usageError("usage: toolhost serve [--stdio | --listen ADDR] [--profile NAME] [--allow-unauthenticated]")
	}
	metrics := gateway.NewMetrics()
	c.serving = metrics
	return c.withHost(func(ctx context.Context, h *host.Host) int {
		g, err := gateway.New(h, &gateway.Options{Logger: c.logger.Named("gateway"), Profile: *profile, AllowUnauthenticated: *allowUnauth, Metrics: metrics,
			Logs: h.Logs}) // GET /api/v1/servers/{name}/logs
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: %v\n", err)
			if errors.Is(err, host.ErrUnknownProfile) {
				return exitUsage
			}
			return exitCallError
		}
		defer g.Close()
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
