package config

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"
)

// Defaults of the [serve] table.
const (
	// DefaultListen is where `toolhost serve --listen` listens when neither
	// the flag nor [serve] listen gives an address: loopback only.
	DefaultListen = "127.0.0.1:8808"
	// DefaultSessionTimeout closes an MCP session of the HTTP gateway that
	// has sent no request for this long.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxBody caps one HTTP request body sent to the gateway.
	DefaultMaxBody = 4 << 20
	// minTokenLen is the shortest bearer token [serve.clients.NAME] accepts.
	minTokenLen = 16
)

// Defaults of the gateway's per-client limits (issue 21: what one client
// can make the gateway do to others). Each is a [serve] key, and a
// [serve.clients.NAME] key that overrides it for that client.
const (
	// DefaultMaxSessions bounds the open HTTP sessions of one client
	// (max_sessions): a session costs about 14 KiB until DELETE or
	// session_timeout, so 64 cost under 1 MiB, while an agent opens one
	// per conversation or process.
	DefaultMaxSessions = 64
	// DefaultMaxConcurrent bounds the requests that reach backends
	// (tools/call, prompts/get, resources/read, completion/complete) one
	// client has in flight (max_concurrent): a model rarely runs more than
	// a handful of tools at once, and 64 leaves room for a pool of agents
	// behind one token while keeping a flood to 64 backend calls.
	DefaultMaxConcurrent = 64
)

// Defaults of the [serve] limits against hostile HTTP clients (issue 21:
// read_timeout, idle_timeout, max_connections, max_connections_per_peer).
const (
	// DefaultReadTimeout bounds reading one HTTP request: a 4 MiB
	// max_body needs about 1.1 Mbit/s to arrive in time. Raise it with
	// max_body for slow links.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request for
	// this long: longer than Go's client (90s), so that clients, not the
	// gateway, close idle connections and never race a request against
	// the close.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConnections bounds the gateway's open HTTP connections.
	DefaultMaxConnections = 1024
	// DefaultMaxConnectionsPerPeer bounds the open HTTP connections of one
	// peer address: one session holds a GET stream and a connection per
	// call in flight, so 128 lets a host run dozens of agents at once while
	// one peer can take at most an eighth of max_connections.
	DefaultMaxConnectionsPerPeer = 128
)

// Defaults and bounds of the [serve] keys that bound what a client that
// does not read can cost the gateway (host/gateway, notify.go).
const (
	// DefaultWriteTimeout bounds one write to an HTTP response stream of
	// the gateway (an SSE event, a flush); a stream whose client has not
	// taken the bytes by then is cut and its session closed.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultNotifyQueue is how many notifications broadcast to a session
	// (list_changed, resources/updated) may wait for its stream; one more
	// closes the session.
	DefaultNotifyQueue = 64
	// MaxNotifyQueue caps notify_queue.
	MaxNotifyQueue = 65536
)

// Serve is the [serve] table: how `toolhost serve` offers the policed
// catalogue to MCP clients (see host/gateway).
type Serve struct {
	// Listen is the Streamable HTTP address, host:port (key listen,
	// default DefaultListen). --listen overrides it.
	Listen string `toml:"listen"`
	// Profile is the view ([profiles.NAME]) of a client that presents no
	// token: the stdio client, and every HTTP client when no [serve.clients]
	// are defined (default "": the global policy only).
	Profile string `toml:"profile"`
	// Stateless serves HTTP without sessions (go-sdk's stateless mode, the
	// 2026-07-28 protocol's model), so replicas need no session affinity;
	// server-to-client requests (elicitation, sampling, roots) are then
	// unavailable.
	Stateless bool `toml:"stateless"`
	// SessionTimeout closes an HTTP session idle this long (default 30m).
	SessionTimeout Duration `toml:"session_timeout"`
	// MaxBody caps the size of one HTTP request body (default 4MiB); a
	// larger body is refused with 413.
	MaxBody Size `toml:"max_body"`
	// WriteTimeout bounds each write of the gateway to an HTTP response
	// stream, SSE events included (default 10s): the client must take
	// the bytes within it or the stream is cut and its session closed. It
	// is not a bound on a whole response, so long-lived SSE streams stay
	// open.
	WriteTimeout Duration `toml:"write_timeout"`
	// NotifyQueue is how many broadcast notifications (list_changed,
	// resources/updated) may wait for one session's stream (default 64,
	// 1 to MaxNotifyQueue); a session whose queue is full is closed.
	NotifyQueue int `toml:"notify_queue"`
	// Code mode (issue 27; config/codemode.go): CodeMode serves run_code
	// to every profile without its own [profiles.NAME] code_mode (default
	// false); [code_mode] says how it runs.
	CodeMode bool `toml:"code_mode" json:",omitempty"`
	// Clients are the HTTP clients allowed in ([serve.clients.NAME]), keyed
	// by NAME. With any defined, every HTTP request must carry one of their
	// tokens ("Authorization: Bearer TOKEN"); an unknown token is 401.
	Clients map[string]*Client `toml:"clients"`

	// Limits against hostile HTTP clients (issue 21). A connection over a
	// limit is closed as soon as it is accepted.

	// ReadTimeout bounds the reading of one HTTP request, headers and body
	// together, from its first byte (default 30s; http.Server.ReadTimeout);
	// a request not in by then is cut and its connection closed. Headers
	// alone must arrive within 10s (or ReadTimeout if shorter). Responses
	// are not bounded: they stream as long as their call runs.
	ReadTimeout Duration `toml:"read_timeout"`
	// IdleTimeout closes a keep-alive connection that has carried no
	// request for this long (default 2m).
	IdleTimeout Duration `toml:"idle_timeout"`
	// MaxConnections bounds the open HTTP connections (default 1024).
	MaxConnections int `toml:"max_connections"`
	// MaxConnectionsPerPeer bounds the open HTTP connections of one peer
	// IP address (default 128, at most max_connections). Behind a
	// reverse proxy every client is the proxy's address: set it to
	// max_connections and bound clients at the proxy.
	MaxConnectionsPerPeer int `toml:"max_connections_per_peer"`
	// MetricsToken, when set, makes GET /metrics require
	// "Authorization: Bearer TOKEN" (at least 16 characters; write it as
	// ${VAR}). It is separate from the client tokens: a scraper gets no
	// catalogue.
	MetricsToken string `toml:"metrics_token" json:"-"`

	// Limits per client (a [serve.clients.NAME] token; every HTTP client
	// without a token counts as one client; a stdio session is bounded on
	// its own). A [serve.clients.NAME] key of the same name overrides them.
	ClientLimits

	// Tool search (issue 27; config/search.go). Catalogue is what each
	// profile's MCP server lists: "full" (every tool the profile allows;
	// the default, also written "") or "search" (the meta-tools
	// search_tools and call_tool, and the tools Always matches: globs over
	// catalogue names). A [profiles.NAME] catalogue or always overrides
	// these for that profile (Config.ToolSearchOf).
	Catalogue   string   `toml:"catalogue" json:",omitempty"`
	Always      []string `toml:"always" json:",omitempty"`
	AlwaysRules []Rule   `toml:"-" json:"-"`
}

// ClientLimits bound what one client of the gateway can make it do.
type ClientLimits struct {
	// MaxSessions caps the client's open HTTP sessions (key max_sessions,
	// default DefaultMaxSessions, at least 1). An initialize over it is
	// refused with HTTP 429 and a JSON-RPC error; a session ended by
	// DELETE or session_timeout frees its slot.
	MaxSessions int `toml:"max_sessions"`
	// MaxConcurrent caps the client's requests that reach backends and are
	// in flight at once, over all its sessions, and those of any one session
	// (key max_concurrent, default DefaultMaxConcurrent, at least 1). One
	// over it is answered at once with a JSON-RPC error, never queued.
	MaxConcurrent int `toml:"max_concurrent"`
}

// Client is one [serve.clients.NAME] table: an HTTP client of the gateway,
// its bearer token and the profile it gets. NAME is what audit records and
// logs say; the token never appears there.
type Client struct {
	Name string `toml:"-"`
	Line int    `toml:"-"`
	// Token is the bearer token, at least 16 characters; write it as
	// ${VAR} so that the file can be committed.
	Token string `toml:"token"`
	// Profile is the [profiles.NAME] the client sees (default "": the
	// global policy only).
	Profile string `toml:"profile"`
	// Admin lets the client use the operator actions of the REST API
	// (enable, disable and restart backends and tools, reload the
	// configuration; each audited with the client's name). Default false.
	Admin bool `toml:"admin"`
	// Limits of this client (default: those of [serve]).
	ClientLimits

	// Rate limits (issue 25, item 4; config/rate.go).
	// Rate limits the calls this client makes, over all its sessions and
	// both APIs (key rate, like "60/m" or "60/m burst 10"; see RateLimit).
	// Default "": no limit.
	Rate      string    `toml:"rate"`
	RateLimit RateLimit `toml:"-" json:"-"` // Rate parsed by Load or Validate
}

func (l *loader) validateServe(cfg *Config) {
	s := &cfg.Serve
	k := func(name ...string) toml.Key { return append(toml.Key{"serve"}, name...) }
	if s.Listen == "" {
		s.Listen = DefaultListen
	} else if host, port, err := net.SplitHostPort(s.Listen); err != nil || !validPort(port) || (host != "" && net.ParseIP(host) == nil && !validHostname(host)) {
		l.errorf(k("listen"), "%q is not host:port: write it like %q, or \":8808\" for every interface", s.Listen, DefaultListen)
	}
	l.timeout(k("session_timeout"), s.SessionTimeout)
	def(&s.SessionTimeout, DefaultSessionTimeout)
	if (l.isSet(k("max_body")) && s.MaxBody == 0) || s.MaxBody < 0 {
		l.errorf(k("max_body"), "must be greater than 0: remove the key for the default (4MiB)")
	}
	if s.MaxBody == 0 {
		s.MaxBody = DefaultMaxBody
	}
	l.validateServeLimits(s)
	// Slow consumers (write_timeout, notify_queue).
	l.timeout(k("write_timeout"), s.WriteTimeout)
	def(&s.WriteTimeout, DefaultWriteTimeout)
	positive(l, k("notify_queue"), &s.NotifyQueue, DefaultNotifyQueue)
	if s.NotifyQueue > MaxNotifyQueue {
		l.errorf(k("notify_queue"), "%d is out of range: use 1 to %d, or remove the key for the default (%d)", s.NotifyQueue, MaxNotifyQueue, DefaultNotifyQueue)
	}
	profile := func(key toml.Key, name string) {
		if _, ok := cfg.Profiles[name]; name != "" && !ok {
			l.errorf(key, "no profile named %q: use the NAME of a [profiles.NAME] table, or remove the key for the global policy", name)
		}
	}
	profile(k("profile"), s.Profile)
	l.validateClientLimits(k(), &s.ClientLimits, ClientLimits{MaxSessions: DefaultMaxSessions, MaxConcurrent: DefaultMaxConcurrent})
	byToken := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(s.Clients)) {
		c := s.Clients[name]
		ck := k("clients", name)
		if c.Name == "" {
			c.Name = name
		}
		if !backendNameRE.MatchString(name) {
			l.errorf(ck, "invalid client name %q: use 1 to 64 letters, digits, _ and -", name)
		}
		switch {
		case c.Token == "" && !l.reported(append(ck, "token")):
			l.errorf(ck, "needs a token: set token = \"${SOME_VAR}\" to a secret of at least %d characters", minTokenLen)
		case c.Token == "":
		case len(c.Token) < minTokenLen:
			// The value is a secret: the message never quotes it.
			l.errorf(append(ck, "token"), "is %d characters: use at least %d (for example the output of: openssl rand -hex 32)", len(c.Token), minTokenLen)
		default:
			if other, dup := byToken[c.Token]; dup {
				l.errorf(append(ck, "token"), "is the same as the token of serve.clients.%s: give every client its own", other)
			}
			byToken[c.Token] = name
		}
		profile(append(ck, "profile"), c.Profile)
		l.validateClientLimits(ck, &c.ClientLimits, s.ClientLimits)
	}
}

// validateClientLimits checks the limit keys of the table at key (each at
// least 1 when set) and fills in those not set from dflt.
func (l *loader) validateClientLimits(key toml.Key, c *ClientLimits, dflt ClientLimits) {
	positive(l, append(slices.Clone(key), "max_sessions"), &c.MaxSessions, dflt.MaxSessions)
	positive(l, append(slices.Clone(key), "max_concurrent"), &c.MaxConcurrent, dflt.MaxConcurrent)
}

// validateServeLimits checks the [serve] limits against hostile HTTP
// clients and fills in their defaults.
func (l *loader) validateServeLimits(s *Serve) {
	k := func(name string) toml.Key { return toml.Key{"serve", name} }
	l.timeout(k("read_timeout"), s.ReadTimeout)
	def(&s.ReadTimeout, DefaultReadTimeout)
	l.timeout(k("idle_timeout"), s.IdleTimeout)
	def(&s.IdleTimeout, DefaultIdleTimeout)
	positive(l, k("max_connections"), &s.MaxConnections, DefaultMaxConnections)
	perPeerSet := l.isSet(k("max_connections_per_peer")) || s.MaxConnectionsPerPeer != 0
	positive(l, k("max_connections_per_peer"), &s.MaxConnectionsPerPeer, DefaultMaxConnectionsPerPeer)
	switch {
	case s.MaxConnections < 1 || s.MaxConnectionsPerPeer <= s.MaxConnections:
	case perPeerSet:
		l.errorf(k("max_connections_per_peer"), "%d is more than max_connections (%d): use at most that", s.MaxConnectionsPerPeer, s.MaxConnections)
	default:
		// Only max_connections was lowered: one peer may use them all.
		s.MaxConnectionsPerPeer = s.MaxConnections
	}
	if s.MetricsToken != "" && len(s.MetricsToken) < minTokenLen {
		// The value is a secret: the message never quotes it.
		l.errorf(k("metrics_token"), "is %d characters: use at least %d (for example the output of: openssl rand -hex 32)", len(s.MetricsToken), minTokenLen)
	}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

// validHostname reports whether h is a plausible DNS name.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
