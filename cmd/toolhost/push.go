package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolhost/toolhost/internal/ociplugin"
)

// push publishes a plugin: toolhost push PLUGIN.wasm REF [--json].
func (c *cli) push(args []string) int {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 2 {
		return c.usageError("usage: toolhost push PLUGIN.wasm oci://REGISTRY/REPO:TAG [--json]")
	}
	opts, code := c.ociOptions()
	if opts == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := ociplugin.Push(ctx, pos[0], pos[1], opts)
	if err != nil {
		return c.ociError(err)
	}
	if *asJSON {
		return c.printJSON(p)
	}
	fmt.Fprintf(c.stdout, "pushed %s to %s\n  manifest %s\n  digest   %s (%d bytes)\n", esc(pos[0]), esc(p.Ref), p.Manifest, p.Digest, p.Size)
	return exitOK
}
