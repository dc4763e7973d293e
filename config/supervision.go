package config

import (
	"maps"
	"slices"
	"time"

	"github.com/BurntSushi/toml"
)

// Supervision defaults: what a backend gets for a key it does not set.
const (
	DefaultStartupTimeout  = 30 * time.Second
	DefaultHealthInterval  = 30 * time.Second
	DefaultHealthTimeout   = 5 * time.Second
	DefaultHealthThreshold = 3
	DefaultRestartMin      = 500 * time.Millisecond
	DefaultRestartMax      = 30 * time.Second
	DefaultMaxRestarts     = 5
	DefaultRestartWindow   = 10 * time.Minute
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 60 * time.Second
	DefaultBreakerSuccess  = 3
)

// Start policies (Supervision.Start).
const (
	StartEager = "eager"
	StartLazy  = "lazy"
)

// Health checks (Supervision.HealthCheck).
const (
	HealthPing = "ping"
	HealthTool = "tool"
	HealthNone = "none"
)

// Supervision is how the host starts, watches and restarts one backend, and
// when it stops sending it calls. Every [servers.NAME] and [plugins.NAME]
// table takes these keys; validation fills in the defaults, so after Load
// every field is set.
type Supervision struct {
	// Start is "eager" (default: connected by host.New) or "lazy"
	// (connected the first time the catalogue is listed or one of its
	// tools is called).
	Start string `toml:"start"`
	// StartupTimeout bounds one attempt to start the backend: spawn or
	// dial, the MCP initialize handshake, the first tools/list and
	// compiling its tools' schemas; for a
	// plugin, compiling and warming its first instance (_initialize and the
	// list export), which the per-call timeout does not bound (key
	// startup_timeout, default 30s). host.New waits at most this long for
	// an eager backend; one still not up is left starting or failed, and
	// restarted by policy.
	StartupTimeout Duration `toml:"startup_timeout"`
	// IdleTimeout stops a stdio server's process after this long without
	// a call (key idle_timeout, default 0: never). Its tools stay in the
	// catalogue; the next call starts it again. Only for stdio servers.
	IdleTimeout Duration `toml:"idle_timeout"`

	// HealthCheck is "ping" (default: an MCP ping, basic/utilities/ping),
	// "tool" (a call of HealthTool with HealthArgs that must succeed
	// without isError) or "none". Set only health_tool to get "tool".
	HealthCheck string `toml:"health_check"`
	// HealthTool is the backend's own name of the tool a "tool" check
	// calls, and HealthArgs its arguments (default {}).
	HealthTool string         `toml:"health_tool"`
	HealthArgs map[string]any `toml:"health_args"`
	// HealthInterval is the time between checks of a ready backend (key
	// health_interval, default 30s); HealthTimeout bounds one check
	// (default 5s).
	HealthInterval Duration `toml:"health_interval"`
	HealthTimeout  Duration `toml:"health_timeout"`
	// HealthThreshold is how many consecutive failed checks mark the
	// backend unhealthy and restart it (default 3). For a plugin it is also
	// how many consecutive calls may trap before its instances are rebuilt.
	HealthThreshold int `toml:"health_threshold"`

	// Tool-definition pinning (issue 25, item 6; config/pins.go).
	// Pin overrides [host] pin for this backend's tools (key pin): "off",
	// "trust-first" or "approve"; empty: [host] pin. See Config.PinOf.
	Pin string `toml:"pin" json:",omitempty"`

	// RestartBackoff bounds the exponential backoff (factor 2, ±50%
	// jitter) between restart attempts: { min = "500ms", max = "30s" }.
	RestartBackoff Backoff `toml:"restart_backoff"`
	// MaxRestarts is how many restarts are allowed within RestartWindow
	// (defaults 5 and 10m). One more failure leaves the backend failed
	// until it is restarted explicitly (host.Restart). 0 never restarts.
	MaxRestarts   *int     `toml:"max_restarts"`
	RestartWindow Duration `toml:"restart_window"`

	// CircuitBreaker is the breaker applied to the backend as a whole and,
	// separately, to each of its tools.
	CircuitBreaker Circuit `toml:"circuit_breaker"`
}

// Backoff is a restart_backoff table.
type Backoff struct {
	Min Duration `toml:"min"`
	Max Duration `toml:"max"`
}

// Circuit is a circuit_breaker table: the circuit opens after Failures
// consecutive failed calls (default 5), lets calls through again
// (half-open) after Cooldown (default 60s), and closes after Successes
// consecutive successes (default 3; a failure while half-open opens it
// again).
type Circuit struct {
	Failures  int      `toml:"failures"`
	Cooldown  Duration `toml:"cooldown"`
	Successes int      `toml:"successes"`
}

// ToolOptions is one [tools.NAME] table, keyed by catalogue name
// ("backend__tool"): how the host treats calls of that tool.
type ToolOptions struct {
	// Name is NAME from the table header; Line its line.
	Name string `toml:"-"`
	Line int    `toml:"-"`

	// Retry marks the tool idempotent: a call that reached the backend and
	// failed there (connection lost, timeout of one attempt, protocol
	// error) may be sent again within the call's deadline. Without it
	// only calls that never reached the backend are retried. Server
	// annotations (idempotentHint) are untrusted hints and never count.
	Retry bool `toml:"retry"`
	// Resilience (issue 25 item 7; decoded and checked in resilience.go).
	//
	// Timeout is the tool's own deadline for one call (key timeout, like
	// "5s"), from the call's start: it replaces its backend's timeout (or
	// [host] call_timeout) for this tool, shorter or longer; the caller's
	// deadline still applies when earlier. 0: the backend's.
	Timeout Duration `toml:"timeout" json:",omitzero"`
	// MaxRetries caps how many times one call is sent again (key
	// max_retries, 0 to 20; nil: DefaultMaxRetries, 3): calls that never
	// reached the backend, and, with retry = true, those it failed. Retries
	// also stop at the call's deadline.
	MaxRetries *int `toml:"max_retries" json:",omitempty"`
	// Backoff is the wait between retries (key backoff: "100ms" or
	// { initial = "100ms", max = "2s" }; defaults 20ms and 1s): exponential,
	// factor 2, ±50% jitter.
	Backoff RetryBackoff `toml:"backoff" json:",omitzero"`
	// Fallback are other catalogue tools tried in order, with the same
	// arguments, when this tool's circuit is open, its backend is
	// unavailable, or its retries are exhausted (key fallback: "b__y" or
	// ["a__x", "b__y"]). Each goes through the whole pipeline (its own
	// policy decision, audit record and deadline); the first that does not
	// fail answers. Fallbacks are not chained: a fallback's own fallbacks
	// are not used.
	Fallback Fallbacks `toml:"fallback"`

	// Idempotency (issue 25, item 5; config/idempotency.go).
	// Idempotent lets a call with an idempotency key (REST
	// idempotency_key, MCP _meta["io.toolhost/idempotency-key"]) be
	// answered with the stored result of the first completed call with
	// that key, within [store] idempotency_ttl. A tool whose annotations
	// say idempotentHint counts too. Default false: a key on another tool
	// is ignored (and the audit record says so).
	Idempotent bool `toml:"idempotent" json:",omitempty"`

	// Grants (issue 25, item 3; config/grants.go).
	//
	// Grant (key grant): "required": a call needs a live grant of its
	// client or profile (toolhost grant), else it is refused with
	// host.ErrGrantRequired; "ask": without one, the calling client's user
	// is asked (an MCP elicitation: once / for 15 minutes / deny); "" (the
	// default): no grant needed, unless [policy] require_grant matches the
	// tool.
	Grant string `toml:"grant" json:",omitempty"`
	// AskTimeout (key ask_timeout, only with grant = "ask") bounds the wait
	// for the answer; the call's deadline bounds it too (default: the
	// call's deadline alone).
	AskTimeout Duration `toml:"ask_timeout" json:",omitempty"`

	// Rate limits (issue 25, item 4; config/rate.go).
	// Rate limits every call of this tool, by any client in any profile:
	// it protects the backend's own quota (key rate, like "60/m" or
	// "60/m burst 10"; see RateLimit). Default "": no limit.
	Rate      string    `toml:"rate"`
	RateLimit RateLimit `toml:"-" json:"-"` // Rate parsed by Load or Validate
}

// toolNameRE is host.ToolNamePattern (a nameRule, not a regexp:
// namerule.go).
var toolNameRE = nameRule{1, 64}

// validateSupervision checks sv and fills in its defaults. stdio tells
// whether the backend is a stdio server (idle_timeout is only for those).
func (l *loader) validateSupervision(sv *Supervision, key toml.Key, stdio bool) {
	k := func(name ...string) toml.Key { return append(key[:len(key):len(key)], name...) }
	switch sv.Start {
	case "":
		sv.Start = StartEager
	case StartEager, StartLazy:
	default:
		l.errorf(k("start"), "%q is not a start policy: use \"eager\" (at host start) or \"lazy\" (on first use)", sv.Start)
	}
	l.timeout(k("startup_timeout"), sv.StartupTimeout)
	def(&sv.StartupTimeout, DefaultStartupTimeout)
	if (l.isSet(k("idle_timeout")) || sv.IdleTimeout != 0) && !stdio {
		l.errorf(k("idle_timeout"), "is only used by stdio servers (command): remove it")
	}
	switch sv.HealthCheck {
	case "":
		sv.HealthCheck = HealthPing
		if sv.HealthTool != "" {
			sv.HealthCheck = HealthTool
		}
	case HealthPing, HealthNone:
		if sv.HealthTool != "" {
			l.errorf(k("health_tool"), "is only used with health_check = \"tool\": remove it or health_check")
		}
	case HealthTool:
		if sv.HealthTool == "" && !l.reported(k("health_tool")) {
			l.errorf(k("health_check"), "\"tool\" needs health_tool: the backend's own name of the tool to call")
		}
	default:
		l.errorf(k("health_check"), "%q is not a health check: use \"ping\", \"tool\" (with health_tool) or \"none\"", sv.HealthCheck)
	}
	if sv.HealthArgs != nil && sv.HealthCheck != HealthTool {
		l.errorf(k("health_args"), "is only used with a health_tool: remove it or set health_tool")
	}
	l.timeout(k("health_interval"), sv.HealthInterval)
	l.timeout(k("health_timeout"), sv.HealthTimeout)
	def(&sv.HealthInterval, DefaultHealthInterval)
	def(&sv.HealthTimeout, DefaultHealthTimeout)
	positive(l, k("health_threshold"), &sv.HealthThreshold, DefaultHealthThreshold)

	l.timeout(k("restart_backoff", "min"), sv.RestartBackoff.Min)
	l.timeout(k("restart_backoff", "max"), sv.RestartBackoff.Max)
	def(&sv.RestartBackoff.Min, DefaultRestartMin)
	if sv.RestartBackoff.Max == 0 {
		sv.RestartBackoff.Max = Duration(max(DefaultRestartMax, sv.RestartBackoff.Min.Std()))
	}
	if sv.RestartBackoff.Max < sv.RestartBackoff.Min {
		l.errorf(k("restart_backoff"), "max (%s) is less than min (%s)", sv.RestartBackoff.Max, sv.RestartBackoff.Min)
	}
	if sv.MaxRestarts == nil {
		n := DefaultMaxRestarts
		sv.MaxRestarts = &n
	} else if *sv.MaxRestarts < 0 {
		l.errorf(k("max_restarts"), "%d is negative: use 0 to never restart", *sv.MaxRestarts)
	}
	l.timeout(k("restart_window"), sv.RestartWindow)
	def(&sv.RestartWindow, DefaultRestartWindow)

	c := &sv.CircuitBreaker
	positive(l, k("circuit_breaker", "failures"), &c.Failures, DefaultBreakerFailures)
	positive(l, k("circuit_breaker", "successes"), &c.Successes, DefaultBreakerSuccess)
	l.timeout(k("circuit_breaker", "cooldown"), c.Cooldown)
	def(&c.Cooldown, DefaultBreakerCooldown)
}

func def(d *Duration, v time.Duration) {
	if *d == 0 {
		*d = Duration(v)
	}
}

// positive checks an integer key that must be at least 1 when set, and
// fills in its default.
func positive(l *loader, key toml.Key, n *int, dflt int) {
	if (l.isSet(key) && *n < 1) || *n < 0 {
		l.errorf(key, "%d is out of range: use 1 or more, or remove the key for the default (%d)", *n, dflt)
	}
	if *n == 0 {
		*n = dflt
	}
}

// validateTools checks the [tools.NAME] tables. Whether NAME and Fallback
// are in the catalogue is only known once the backends are up: the host
// logs a warning for a name that is not, and toolhost check reports it.
func (l *loader) validateTools(cfg *Config) {
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t := cfg.Tools[name]
		key := toml.Key{"tools", name}
		if !toolNameRE.MatchString(name) {
			l.errorf(key, "%q is not a catalogue tool name (like \"fs__read_file\", at most 64 letters, digits, _ and -)", name)
		}
		l.validateResilience(name, t, key)
	}
}
