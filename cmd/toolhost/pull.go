package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/ociplugin"
	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

// pull fetches a plugin from an OCI registry into the cache ahead of a
// start: toolhost pull REF [--sha256 HEX] [--json]. It prints the
// manifest and module digests and the cached file.
func (c *cli) pull(args []string) int {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	pin := fs.String("sha256", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		return c.usageError("usage: toolhost pull oci://REGISTRY/REPO:TAG [--sha256 HEX] [--json]")
	}
	opts, code := c.ociOptions()
	if opts == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := ociplugin.Pull(ctx, pos[0], *pin, opts)
	if err != nil {
		return c.ociError(err)
	}
	if *asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "%s\n  manifest %s\n  digest   %s (pin it: sha256 = %q)\n  path     %s\n", esc(res.Ref), res.Manifest, res.Digest, strings.TrimPrefix(res.Digest, "sha256:"), esc(res.Path))
	switch {
	case res.Offline:
		fmt.Fprintf(c.stdout, "  cached, registry unreachable (%s): resolved at %s\n", esc(res.Reason), res.ResolvedAt.Format("2006-01-02 15:04:05Z07:00"))
	case res.Pulled:
		fmt.Fprintln(c.stdout, "  pulled")
	default:
		fmt.Fprintln(c.stdout, "  up to date (cached)")
	}
	return exitOK
}

// ociOptions are the options of pull, push and check: the cache of the
// configuration's [host] cache_dir when a configuration is found (else the
// default cache), logs to c.logger.
func (c *cli) ociOptions() (*ociplugin.Options, int) {
	path := c.configPath
	if path == "" {
		path = os.Getenv("TOOLHOST_CONFIG")
	}
	opts := &ociplugin.Options{Logger: c.logger.Named("oci")}
	if path == "" {
		if _, err := os.Stat(defaultConfig); err != nil {
			return opts, exitOK
		}
	}
	cfg, code := c.loadConfig()
	if cfg == nil {
		return nil, code
	}
	return ociOptionsOf(cfg, c), exitOK
}

func ociOptionsOf(cfg *config.Config, c *cli) *ociplugin.Options {
	return &ociplugin.Options{CacheDir: cfg.Host.CacheDir, Logger: c.logger.Named("oci")}
}

// ociError prints err and returns its exit status: 2 for what the
// reference or artifact gets wrong (ErrRef, ErrPinned, ErrMediaType,
// ErrTooLarge, ErrDigest), 3 for a registry that failed (ErrPull), 2
// otherwise (a file that cannot be read, the cache).
func (c *cli) ociError(err error) int {
	fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
	if errors.Is(err, ociplugin.ErrPull) && !errors.Is(err, ociref.ErrRef) {
		return exitCallError
	}
	return exitUsage
}

// ociCheck is what check found of the OCI plugins: a line per plugin, and
// the cached module of each reference resolved.
type ociCheck struct {
	lines   []string
	modules map[string]string // ref -> cached module
}

func (o ociCheck) cached(ref string) (string, bool) {
	p, ok := o.modules[ref]
	return p, ok
}

// checkOCI resolves every enabled OCI plugin of cfg with ociplugin.Pull:
// "backend NAME: REF → sha256:… (pulled|cached|cached, registry
// unreachable)". A registry that fails with nothing cached is a line, not
// an error (the backend fails at start, the others serve); an artifact
// that is not a plugin as configured (a pin mismatch, a wrong media type,
// over the size limit, a digest mismatch) makes the configuration invalid.
func (c *cli) checkOCI(cfg *config.Config) (ociCheck, int) {
	res := ociCheck{modules: map[string]string{}}
	opts := ociOptionsOf(cfg, c)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, n := range sortedNames(cfg.Plugins) {
		p := cfg.Plugins[n]
		if !ociref.Is(p.Path) || !p.IsEnabled() {
			continue
		}
		r, err := ociplugin.Pull(ctx, p.Path, p.SHA256, opts)
		switch {
		case err == nil:
			res.modules[p.Path] = r.Path
			res.lines = append(res.lines, fmt.Sprintf("backend %s: %s", n, esc(r.Status())))
		case errors.Is(err, ociplugin.ErrPull) && !errors.Is(err, ociplugin.ErrDigest):
			res.lines = append(res.lines, fmt.Sprintf("backend %s: %s: NOT PULLED: %s", n, esc(p.Path), esc(err)))
		default:
			fmt.Fprintf(c.stderr, "toolhost: invalid configuration:\n%s:%d: plugins.%s.path: %s\n", cfg.Path, p.Line, n, esc(err))
			return res, exitUsage
		}
	}
	return res, exitOK
}
