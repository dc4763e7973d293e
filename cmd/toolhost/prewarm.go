package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/ociplugin"
	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
	"github.com/toolhost/toolhost/sandbox"
)

// prewarm compiles every plugin of the configuration into the compilation
// cache and writes its tool list to the tool-list cache, so that the next
// tools, call or serve starts warm. Plugins are compiled in parallel (at
// most one per CPU); servers are not started.
func (c *cli) prewarm(args []string) int {
	fs := flag.NewFlagSet("prewarm", flag.ContinueOnError)
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		return c.usageError("usage: toolhost prewarm")
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	eng, err := sandbox.NewEngine(&sandbox.EngineOptions{CacheDir: cfg.Host.CacheDir, Logger: c.logger.Named("sandbox")})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	defer eng.Close()
	names := sortedNames(cfg.Plugins)
	type result struct {
		tools   int
		elapsed time.Duration
		err     error
	}
	results := make([]result, len(names))
	start := time.Now()
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			n, err := c.prewarmOne(ctx, eng, cfg, cfg.Plugins[name])
			results[i] = result{n, time.Since(t0), err}
		})
	}
	wg.Wait()
	code = exitOK
	for i, name := range names {
		r := results[i]
		if r.err != nil {
			fmt.Fprintf(c.stderr, "toolhost: prewarm %s: %s\n", name, esc(r.err))
			code = exitCallError
			continue
		}
		fmt.Fprintf(c.stdout, "%s: compiled and listed in %s: %d tool%s\n", name, r.elapsed.Round(time.Millisecond), r.tools, map[bool]string{true: "", false: "s"}[r.tools == 1])
	}
	fmt.Fprintf(c.stdout, "%d of %d plugins prewarmed in %s (cache %s)\n", countOK(results, func(r result) bool { return r.err == nil }), len(names), time.Since(start).Round(time.Millisecond), eng.CacheDir())
	return code
}

// prewarmOne compiles p (through the compilation cache), warms an
// instance, lists its tools and rewrites its tool-list cache entry. The
// compile has no deadline (a cold compile is what prewarm is for, and can
// take long on a busy machine); the warm-up is bounded as in a start
// without a deadline (sandbox: the longer of 30s and the call timeout),
// the listing by the call timeout.
func (c *cli) prewarmOne(ctx context.Context, eng *sandbox.Engine, cfg *config.Config, pc *config.Plugin) (int, error) {
	m, err := host.PluginManifest(cfg, pc.Name)
	if err != nil {
		return 0, err
	}
	if ociref.Is(m.Path) {
		// An OCI plugin: pull it (or find it in the cache) first.
		res, err := ociplugin.Pull(ctx, m.Path, m.SHA256, ociOptionsOf(cfg, c))
		if err != nil {
			return 0, err
		}
		mm := *m
		mm.Path, mm.SHA256 = res.Path, strings.TrimPrefix(res.Digest, "sha256:")
		m = &mm
	}
	p := eng.Plugin(m, &sandbox.PluginOptions{Logger: c.logger.Named(pc.Name), RefreshToolCache: true})
	defer p.Close()
	if _, err := p.Connect(ctx); err != nil {
		return 0, err
	}
	tools, err := p.ListTools(ctx)
	if err != nil {
		return 0, err
	}
	return len(tools), nil
}

func countOK[T any](s []T, ok func(T) bool) int {
	n := 0
	for _, v := range s {
		if ok(v) {
			n++
		}
	}
	return n
}
