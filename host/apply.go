package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/toolhost/toolhost/config"
)

// Errors of backends changed at run time (Host.Apply, Add, Remove, Enable,
// Disable). A call to a removed or disabled backend's tool wraps both
// ErrBackendUnavailable and one of these.
var (
	// ErrBackendRemoved: the backend was removed (Host.Apply with a
	// configuration without it, or Host.Remove) or replaced by its new
	// configuration while the operation waited for it or ran.
	ErrBackendRemoved = errors.New("backend removed")

	// ErrBackendDisabled: the backend is disabled, at run time
	// (Host.Disable; Host.Enable starts it again) or by its configuration
	// (enabled = false in its [servers.NAME] or [plugins.NAME] table; Host.Apply
	// with enabled = true starts it). Its configuration is kept, Status
	// shows it StateDisabled, and it contributes no tools, prompts or
	// resources.
	ErrBackendDisabled = errors.New("backend disabled")

	// ErrBackendExists: Host.Add was given a name that a backend already
	// has, or Host.Apply a configuration that names a backend added with
	// Host.Add.
	ErrBackendExists = errors.New("backend already exists")
)

// topology is the configuration and the backends in force. A published
// topology is never changed: Apply, Add, Remove, Enable and Disable build a
// new one and store it (holding closeMu, which serialises them with each
// other and with Close, and rebuildMu, so a rebuild sees one topology);
// readers load it once per use.
type topology struct {
	cfg      *config.Config
	backends []*backend // sorted by name
	byName   map[string]*backend
	custom   map[string]*custom // the backends added with Host.Add
	disabled map[string]bool    // the backends disabled with Host.Disable
}

func (h *Host) config() *config.Config        { return h.cur.Load().cfg }
func (h *Host) all() []*backend               { return h.cur.Load().backends }
func (h *Host) named(name string) *backend    { return h.cur.Load().byName[name] }
func (t *topology) clone() *topology          { return t.with(nil) }
func (b *backend) startsEagerly() bool        { return b.sv.Start != config.StartLazy }
func (h *Host) launch(b *backend)             { h.spawn(b.supervise) }
func (h *Host) lockTopology() (unlock func()) { h.closeMu.Lock(); return h.closeMu.Unlock }

// offInConfig reports whether t's configuration has backend name with
// enabled = false (a backend added with Host.Add never is).
func (t *topology) offInConfig(name string) bool {
	_, inCfg := t.cfg.Servers[name]
	if !inCfg && t.cfg.Plugins[name] == nil {
		return false
	}
	return !t.cfg.BackendEnabled(name)
}

// errConfigDisabled is the last error of a backend disabled by its
// configuration.
func errConfigDisabled(name string) error {
	return fmt.Errorf("%w: enabled = false in the configuration: set enabled = true in its table (or remove the key) and reload to start %q", ErrBackendDisabled, name)
}

// with returns a copy of t whose backends are t's with those of put
// replacing (or joining) the ones of the same name; a nil value removes it.
func (t *topology) with(put map[string]*backend) *topology {
	n := &topology{cfg: t.cfg, byName: maps.Clone(t.byName), custom: maps.Clone(t.custom), disabled: maps.Clone(t.disabled)}
	if n.custom == nil {
		n.custom = map[string]*custom{}
	}
	if n.disabled == nil {
		n.disabled = map[string]bool{}
	}
	for name, b := range put {
		if b == nil {
			delete(n.byName, name)
		} else {
			n.byName[name] = b
		}
	}
	for _, b := range n.byName {
		n.backends = append(n.backends, b)
	}
	sort.Slice(n.backends, func(i, j int) bool { return n.backends[i].name < n.backends[j].name })
	return n
}

// publish makes t the topology in force and rebuilds the catalogue from it.
// It emits an EventCatalogue when catalogue names were added or removed, or
// when force is set (the policy, a profile or a tool's options changed, so
// what a view offers may have changed with the same names).
func (h *Host) publish(t *topology, force bool) {
	h.rebuildMu.Lock()
	defer h.rebuildMu.Unlock()
	before := h.visibleNames()
	h.cur.Store(t)
	if err := h.rebuild(false); err != nil {
		h.logger.Error("catalogue", "error", err)
	}
	after := h.visibleNames()
	added, removed := diffSorted(before, after), diffSorted(after, before)
	if force || len(added)+len(removed) > 0 {
		h.emit(Event{Kind: EventCatalogue, Added: added, Removed: removed})
	}
}

// diffSorted returns the names of b that are not in a (both sorted).
func diffSorted(a, b []string) []string {
	var out []string
	for _, n := range b {
		if i := sort.SearchStrings(a, n); i == len(a) || a[i] != n {
			out = append(out, n)
		}
	}
	return out
}

// ApplyReport says what Host.Apply did. Every list holds backend names,
// sorted.
type ApplyReport struct {
	// Added are the backends of the new configuration that were not
	// running, now started (eager) or ready to start on first use (lazy).
	Added []string `json:"added,omitempty"`
	// Removed are the backends that are not in the new configuration, now
	// stopped: their child processes and goroutines are gone.
	Removed []string `json:"removed,omitempty"`
	// Changed are the backends whose configuration changed: the old one was
	// stopped, and one with the new configuration started.
	Changed []string `json:"changed,omitempty"`
	// Unchanged are the backends left as they were: same process, same
	// connection, same restart count and circuit breakers.
	Unchanged []string `json:"unchanged,omitempty"`
	// Disabled are the backends of the new configuration that are
	// disabled (Host.Disable, or enabled = false in cfg) and so were not
	// started; they also appear in Added, Changed or Unchanged. A backend
	// whose enabled key changed is Changed: enabled, it starts; disabled,
	// its process is stopped.
	Disabled []string `json:"disabled,omitempty"`
	// Policy is set when [policy], [profiles] or [tools] differ (positions
	// in the file included): the catalogue's views were decided afresh and
	// an EventCatalogue was emitted even if no name came or went.
	Policy bool `json:"policy,omitempty"`
	// NotApplied names the keys (or tables: "store", "code_mode") that
	// differ in the new configuration but keep the value they had at
	// start until the process is restarted. Host.Apply leaves it empty;
	// toolhost serve's reload fills it in.
	NotApplied []string `json:"not_applied,omitempty"`
}

// Apply makes the Host run cfg: it diffs cfg against the configuration in
// force, stops the backends cfg no longer names, starts the ones it adds,
// restarts (stops, then starts with the new configuration) the ones whose
// table changed, and leaves the others untouched. A backend's table is
// compared whole after defaults (a [servers.NAME] or [plugins.NAME] with
// its supervision keys), together with what it takes from [host]
// (call_timeout, when it has no timeout of its own) and the configuration's
// directory; a plugin whose .wasm file changed on disk under the same table
// is not restarted (Host.Restart does that). The new [policy], [profiles] and
// [tools] take effect for every call that resolves its tool after the
// catalogue is rebuilt; calls already past the policy finish under the old.
// Backends added with Host.Add are kept; a disabled backend stays disabled
// (with its new configuration, if it changed). A backend with enabled =
// false in cfg is treated as absent for what runs (nothing is started, its
// tools leave the catalogue) and present for what is shown (Status lists it
// StateDisabled; a call to one of its tools fails with
// ErrBackendUnavailable and ErrBackendDisabled).
//
// Apply waits, like New, until every started eager backend is ready or its
// first attempt has failed (each bounded by its startup_timeout), or until
// ctx is done; a backend that fails to start does not fail Apply (Status
// shows it). A stopped backend's calls in flight fail with an error
// wrapping ErrBackendRemoved (and the transport's ErrClosed, for a call its
// transport had sent), and so do calls that were waiting for it. Every change of the catalogue emits an
// EventCatalogue, and every stopped backend an EventState with
// StateClosed and an error wrapping ErrBackendRemoved.
//
// cfg must be a Config of its own (from config.Load or config.Parse, or
// built in Go), not the one in force changed in place: Apply compares the
// two, and the Host keeps cfg and reads it from then on.
//
// cfg is validated first, as New does, and an invalid cfg changes nothing:
// the error is the config.ErrorList. Other errors, with nothing changed:
// ErrBackendExists (cfg names a backend added with Host.Add), ErrClosed, or
// a backend that cannot be built from cfg (no Wasm engine). Not applied
// until a new Host: [host] audit_log, audit_redact, cache_dir and log_*, and
// [serve]. Apply is serialised with Close, Add, Remove, Enable and Disable.
func (h *Host) Apply(ctx context.Context, cfg *config.Config) (ApplyReport, error) {
	var rep ApplyReport
	if cfg == nil {
		return rep, errors.New("host: Apply: nil configuration; pass one from config.Load or config.Parse")
	}
	if cfg == h.config() {
		return rep, errors.New("host: Apply: cfg is the configuration in force; pass a new one (config.Load, config.Parse), not the same one changed")
	}
	if !cfg.Validated() {
		if err := cfg.Validate(); err != nil {
			return rep, fmt.Errorf("host: invalid configuration: %w", err)
		}
	}
	unlock := h.lockTopology()
	unlocked := false
	defer func() {
		if !unlocked {
			unlock()
		}
	}()
	if h.isClosed() {
		return rep, ErrClosed
	}
	old := h.cur.Load()
	for _, name := range sortedKeys(old.custom) {
		if cfg.Servers[name] != nil || cfg.Plugins[name] != nil {
			return rep, fmt.Errorf("%w: the configuration names %q, a backend added with Host.Add: remove it first (Host.Remove) or rename it", ErrBackendExists, name)
		}
	}
	built, err := h.buildFrom(cfg)
	if err != nil {
		return rep, err
	}
	put := map[string]*backend{}
	var stop, start []*backend
	next := old.clone()
	next.cfg = cfg
	for _, name := range sortedKeys(built) {
		nb, ob := built[name], old.byName[name]
		switch {
		case ob == nil:
			rep.Added = append(rep.Added, name)
		case sameBackend(old.cfg, cfg, name):
			rep.Unchanged = append(rep.Unchanged, name)
			nb.cancel()
			nb = nil
		default:
			rep.Changed = append(rep.Changed, name)
			stop = append(stop, ob)
		}
		off := old.disabled[name] || next.offInConfig(name)
		if off {
			rep.Disabled = append(rep.Disabled, name)
		}
		if nb == nil {
			continue
		}
		put[name] = nb
		if off {
			h.disable(nb, next.offInConfig(name))
		} else {
			start = append(start, nb)
		}
	}
	for _, name := range sortedKeys(old.byName) {
		if built[name] == nil && old.custom[name] == nil {
			rep.Removed = append(rep.Removed, name)
			stop = append(stop, old.byName[name])
			put[name] = nil
			delete(next.disabled, name)
		}
	}
	next = next.with(put)
	rep.Policy = !sameJSON(old.cfg.Policy, cfg.Policy) || !sameJSON(old.cfg.Profiles, cfg.Profiles) || !sameJSON(old.cfg.Tools, cfg.Tools)
	// The new topology first, so no new call reaches a backend being
	// stopped; then the old backends go, and then the new ones start (a
	// changed server may need its predecessor's port or files).
	// (A changed [serve] also emits EventCatalogue: a gateway serves
	// its new profiles and tokens, Host.Config.)
	h.publish(next, rep.Policy || !sameJSON(old.cfg.Serve, cfg.Serve))
	h.retire(stop, func(b *backend) error {
		if next.byName[b.name] != nil {
			return fmt.Errorf("%w: replaced by its new configuration (Host.Apply)", ErrBackendRemoved)
		}
		return fmt.Errorf("%w: not in the new configuration (Host.Apply)", ErrBackendRemoved)
	})
	for _, b := range start {
		h.launch(b)
	}
	// Close may come now: it stops what was just launched.
	unlocked = true
	unlock()
	h.awaitFirst(ctx, start)
	h.pruneToolsOff()
	for _, p := range h.ToolOptionProblems() {
		h.logger.Warn(p)
	}
	h.logger.Info("configuration applied", "added", rep.Added, "removed", rep.Removed, "changed", rep.Changed,
		"unchanged", len(rep.Unchanged), "policy", rep.Policy)
	return rep, nil
}

// buildFrom builds (without starting) a backend for every server and
// plugin of cfg, as New does, for the Host h. The plugins share h's Wasm
// engine (made now if h has none yet).
func (h *Host) buildFrom(cfg *config.Config) (map[string]*backend, error) {
	// (audit: the client features of a new server audit through h.)
	s := &Host{opts: h.opts, logger: h.logger, ctx: h.ctx, engine: h.engine, audit: h.audit, logs: h.logs}
	if h.logs != nil { // log files: the new configuration's secrets are scrubbed too
		h.logs.SetScrub(scrubFunc(cfg))
	}
	s.cur.Store(&topology{cfg: cfg, byName: map[string]*backend{}})
	err := s.build()
	if s.engine != h.engine {
		h.engine = s.engine
		h.closers = append(h.closers, s.closers...)
	}
	byName := s.cur.Load().byName
	for _, b := range byName {
		b.hooks = h.hooks()
		if err != nil {
			b.cancel()
		}
	}
	if err != nil {
		return nil, err
	}
	return byName, nil
}

// sameBackend reports whether backend name is configured alike in a and
// b: its table after defaults, with its position left out, and what it takes
// from the rest of the configuration.
func sameBackend(a, b *config.Config, name string) bool {
	type fingerprint struct {
		Server  *config.Server
		Plugin  *config.Plugin
		Timeout time.Duration
		Dir     string
		Secret  string // the OAuth client secret, which Server's JSON leaves out
	}
	fp := func(c *config.Config) fingerprint {
		f := fingerprint{Dir: c.Dir}
		var own config.Duration
		if s := c.Servers[name]; s != nil {
			cp := *s
			cp.Line = 0
			f.Server, own = &cp, s.Timeout
			if s.OAuth != nil {
				f.Secret = s.OAuth.ClientSecret
			}
		}
		if p := c.Plugins[name]; p != nil {
			cp := *p
			cp.Line = 0
			f.Plugin, own = &cp, p.Timeout
		}
		switch {
		case own > 0:
			f.Timeout = own.Std()
		case c.Host.CallTimeout > 0:
			f.Timeout = c.Host.CallTimeout.Std()
		default:
			f.Timeout = config.DefaultCallTimeout
		}
		return f
	}
	return sameJSON(fp(a), fp(b))
}

// sameJSON reports whether a and b have the same JSON encoding (map keys
// are sorted by encoding/json); one that cannot be encoded is never the
// same.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// retire stops backends that have left the topology (or are being
// replaced), concurrently: their supervisors return (an attempt to start in
// progress is cancelled), their connections are closed, which waits until
// their child processes are gone, and each is closed with the error why
// gives it (an EventState tells).
func (h *Host) retire(bs []*backend, why func(*backend) error) {
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.cancel()
			<-b.exited
			b.mu.Lock()
			tr := b.tr
			b.tr = nil
			b.mu.Unlock()
			b.setState(StateClosed, why(b))
			if tr != nil {
				if err := tr.Close(); err != nil {
					b.logger.Warn("close", "error", err)
				}
			}
			b.logger.Info("backend stopped")
		}()
	}
	wg.Wait()
}

// awaitFirst waits, within ctx, until every eager backend of bs (launched)
// is ready or its first attempt has failed.
func (h *Host) awaitFirst(ctx context.Context, bs []*backend) {
	for _, b := range bs {
		if !b.startsEagerly() {
			continue
		}
		select {
		case <-b.firstDone:
		case <-ctx.Done():
		}
	}
}

// disable makes b, a backend never started, a disabled one: it has no
// supervisor (its exited is closed) and calls fail with ErrBackendDisabled,
// whose message says how to enable it: byConfig, enabled = false in the
// configuration, else Host.Enable. b is not started yet (New disables
// before it launches any backend).
func (h *Host) disable(b *backend, byConfig bool) {
	err := fmt.Errorf("%w: Host.Enable starts it", ErrBackendDisabled)
	if byConfig {
		err = errConfigDisabled(b.name)
	}
	b.mu.Lock()
	b.state, b.lastErr = StateDisabled, err
	b.mu.Unlock()
	close(b.exited)
	b.firstOnce.Do(func() { close(b.firstDone) })
}

// fresh builds backend name anew (not started) from its configuration in t,
// or from what Host.Add was given.
func (h *Host) fresh(t *topology, name string) (*backend, error) {
	if c := t.custom[name]; c != nil {
		return h.newCustom(name, c), nil
	}
	built, err := h.buildFrom(t.cfg)
	if err != nil {
		return nil, err
	}
	for n, b := range built {
		if n != name {
			b.cancel()
		}
	}
	return built[name], nil
}

// Disable stops backend name and keeps it stopped, remembering its
// configuration, until Host.Enable: its tools leave the catalogue (an
// EventCatalogue tells), Status shows it StateDisabled, and calls to it
// fail with ErrBackendUnavailable and ErrBackendDisabled. It stays disabled
// across Host.Apply while the configuration names it. Disabling a disabled
// backend (by Host.Disable or by enabled = false) does nothing. It returns once the backend's child process and
// goroutines are gone. Errors: ErrUnknownBackend, ErrClosed.
func (h *Host) Disable(ctx context.Context, name string) error {
	defer h.lockTopology()()
	if h.isClosed() {
		return ErrClosed
	}
	old := h.cur.Load()
	b := old.byName[name]
	if b == nil {
		return unknownBackend(name)
	}
	if old.disabled[name] || old.offInConfig(name) {
		return nil
	}
	nb, err := h.fresh(old, name)
	if err != nil {
		return err
	}
	h.disable(nb, false)
	next := old.with(map[string]*backend{name: nb})
	next.disabled[name] = true
	h.publish(next, false)
	h.retire([]*backend{b}, func(*backend) error { return nb.lastErr })
	h.emit(Event{Kind: EventState, Backend: name, State: StateDisabled, Err: nb.lastErr})
	b.logger.Info("backend disabled")
	return nil
}

// Enable starts a backend stopped by Host.Disable, with its configuration
// in force, and waits, within ctx, as New does for an eager backend (a lazy
// one starts on first use). It returns nil when the backend is ready (or
// lazy), else its first attempt's error, wrapping ErrBackendUnavailable;
// the restart policy then goes on trying, as for any backend. Enabling a
// backend that is not disabled does nothing. A backend disabled by its
// configuration (enabled = false) is not started: the error wraps
// ErrBackendDisabled (apply a configuration that enables it). Errors:
// ErrUnknownBackend, ErrClosed, ErrBackendUnavailable, ErrBackendDisabled.
func (h *Host) Enable(ctx context.Context, name string) error {
	unlock := h.lockTopology()
	if h.isClosed() {
		unlock()
		return ErrClosed
	}
	old := h.cur.Load()
	ph := old.byName[name]
	if ph == nil {
		unlock()
		return unknownBackend(name)
	}
	if old.offInConfig(name) {
		unlock()
		return fmt.Errorf("host: Enable: %w", errConfigDisabled(name))
	}
	if !old.disabled[name] {
		unlock()
		return nil
	}
	nb, err := h.fresh(old, name)
	if err != nil {
		unlock()
		return err
	}
	next := old.with(map[string]*backend{name: nb})
	delete(next.disabled, name)
	ph.cancel()
	h.publish(next, false)
	h.launch(nb)
	unlock()
	if !nb.startsEagerly() {
		return nil
	}
	select {
	case <-nb.firstDone:
	case <-ctx.Done():
		return fmt.Errorf("%w: enabling %q: %w", ErrBackendUnavailable, name, ctxErr(ctx))
	}
	if ok, lastErr := nb.ready(); !ok {
		return fmt.Errorf("%w: enabling %q: %w", ErrBackendUnavailable, name, lastErr)
	}
	return nil
}

func unknownBackend(name string) error {
	return fmt.Errorf("%w: %q: backends are the [servers.NAME] and [plugins.NAME] tables of the configuration and those added with Host.Add", ErrUnknownBackend, name)
}

// goneErr is the error for a request to b's supervisor once it has
// returned: b was disabled or removed, or the Host closed.
func (b *backend) goneErr() error {
	b.mu.Lock()
	state, err := b.state, b.lastErr
	b.mu.Unlock()
	if state == StateDisabled || errors.Is(err, ErrBackendRemoved) || errors.Is(err, ErrBackendDisabled) {
		return fmt.Errorf("%w: backend %q: %w", ErrBackendUnavailable, b.name, err)
	}
	return ErrClosed
}

// profileRemoved is the error of a View whose profile Host.Apply removed.
func profileRemoved(profile string) error {
	return fmt.Errorf("%w %q: it is no longer in the configuration (Host.Apply removed it)", ErrUnknownProfile, profile)
}

// removedProfile is the profile of a View whose profile Host.Apply
// removed: allow lists (tools, prompts, resources) whose one glob matches
// no name, so it allows nothing.
func removedProfile(profile string) *config.Profile {
	none := func(key string) []config.Rule {
		return []config.Rule{{Key: "profiles." + profile + "." + key + " (the profile was removed)"}}
	}
	return &config.Profile{Name: profile, AllowRules: none("allow"), PromptRules: none("prompts"), ResourceRules: none("resources")}
}
