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
	// Clients are the HTTP clients allowed in ([serve.clients.NAME]), keyed
	// by NAME. With any defined, every HTTP request must carry one of their
	// tokens ("Authorization: Bearer TOKEN"); an unknown token is 401.
	Clients map[string]*Client `toml:"clients"`
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
			l.errorf(ck, "token is required: set token = \"${SOME_VAR}\" to a secret of at least %d characters", minTokenLen)
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
