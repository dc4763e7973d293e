package config

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
	"github.com/toolhost/toolhost/internal/redact"
)

var (
	// backendNameRE is the rule for [servers.NAME] and [plugins.NAME]: tool
	// names are NAME__TOOL and must stay within ^[A-Za-z0-9_-]{1,64}$.
	// (nameRule, not regexps: namerule.go.)
	backendNameRE = nameRule{1, 64}
	prefixRE      = nameRule{0, 40}
)

const (
	// wasmPage is the WebAssembly page size; memory caps are whole pages.
	wasmPage = 64 << 10
	// maxWasmMemory is the most a 32-bit WebAssembly memory can hold.
	maxWasmMemory = 65536 * wasmPage
	// maxInstances bounds a plugin's instance pool.
	maxInstances = 256
	// maxPluginCount bounds max_open_files and max_http_requests.
	maxPluginCount = 1 << 20
)

// validate checks cfg once decoded and fills in defaults. It runs even when
// decoding found problems, so that one load reports them all; fields that
// failed to decode are skipped (isSet).
func (l *loader) validate(cfg *Config) {
	l.validating = true
	// [host]
	h := &cfg.Host
	l.timeout(toml.Key{"host", "call_timeout"}, h.CallTimeout)
	if h.CallTimeout == 0 {
		h.CallTimeout = Duration(DefaultCallTimeout)
	}
	if h.CacheDir != "" {
		h.CacheDir = resolvePath(l.dir, h.CacheDir)
	}
	if h.AuditLog != "" {
		h.AuditLog = resolvePath(l.dir, h.AuditLog)
	}
	l.compileRedact(h)
	l.logFiles(h)
	l.roots(toml.Key{"host", "roots"}, h.Roots)
	l.hostSandbox(h)
	l.validateStore(&cfg.Store)

	// Names: unique across servers and plugins, reported on the later one.
	type backend struct {
		key  toml.Key
		line int
	}
	var all []backend
	for _, n := range cfg.ServerNames() {
		all = append(all, backend{toml.Key{"servers", n}, cfg.Servers[n].Line})
	}
	for _, n := range cfg.PluginNames() {
		all = append(all, backend{toml.Key{"plugins", n}, cfg.Plugins[n].Line})
	}
	slices.SortStableFunc(all, func(a, b backend) int { return a.line - b.line })
	seen := map[string]backend{}
	var keys []toml.Key // the backends whose names are not taken: their prefixes are compared
	for _, b := range all {
		name := b.key[1]
		switch {
		case !backendNameRE.MatchString(name):
			l.errorf(b.key, "invalid name %q: use 1 to 64 letters, digits, _ and -", name)
		case strings.Contains(name, "__"):
			l.errorf(b.key, "invalid name %q: it must not contain \"__\", which separates the backend from the tool in tool names", name)
		}
		if first, dup := seen[name]; dup {
			l.errorf(b.key, "name %q is already used by %s (line %d): backend names must be unique across servers and plugins; rename one", name, first.key, first.line)
			continue
		}
		seen[name] = b
		keys = append(keys, b.key)
	}
	l.samePrefixes(cfg, keys)

	for _, n := range cfg.ServerNames() {
		l.validateServer(cfg.Servers[n], toml.Key{"servers", n})
	}
	for _, n := range cfg.PluginNames() {
		l.validatePlugin(cfg.Plugins[n], toml.Key{"plugins", n})
	}
	l.validatePolicy(cfg)
	l.validateTools(cfg)
	l.validateGrants(cfg) // grants (config/grants.go)
	l.validateServe(cfg)
	l.validatePins(cfg)
	l.validateRates(cfg)
	l.validateSearch(cfg)   // tool search (config/search.go)
	l.validateCodeMode(cfg) // code mode (config/codemode.go)
}

// samePrefixes reports two backends given the same non-empty prefix (the
// default prefix is the name + "__"): every tool name they share would
// collide in the catalogue. That is known from the configuration alone, so
// it is a load error (DESIGN decision 5); collisions that only the tool
// lists reveal (prefix "" on two backends, names equal once sanitized)
// are run-time matters: the host skips the later tool with a warning.
func (l *loader) samePrefixes(cfg *Config, keys []toml.Key) {
	first := map[string]toml.Key{}
	for _, key := range keys {
		var p *string
		if s := cfg.Servers[key[1]]; key[0] == "servers" && s != nil {
			p = s.Prefix
		} else if pl := cfg.Plugins[key[1]]; key[0] == "plugins" && pl != nil {
			p = pl.Prefix
		}
		eff := ToolPrefix(key[1], p)
		if eff == "" {
			continue
		}
		if f, dup := first[eff]; dup {
			at := key
			if p != nil {
				at = append(slices.Clone(key), "prefix")
			}
			l.errorf(at, "prefix %q is also %s's: their tools would get the same names; give one of them another prefix", eff, strings.Join(f, "."))
			continue
		}
		first[eff] = key
	}
}

func (l *loader) validateServer(s *Server, key toml.Key) {
	k := func(name string) toml.Key { return append(key[:len(key):len(key)], name) }
	l.description(k("description"), s.Description)
	switch {
	case s.Command != "" && s.URL != "":
		l.errorf(key, "has both command and url: set exactly one of command (a stdio server) or url (a Streamable HTTP server)")
	case s.Command == "" && s.URL == "" && !l.reported(k("command")) && !l.reported(k("url")) && !l.typos[key.String()]:
		// (With an unknown key in the table, that is the likely cause.)
		l.errorf(key, "has neither command nor url: set exactly one of command (a stdio server) or url (a Streamable HTTP server)")
	case s.Command != "":
		if l.isSet(k("oauth")) || s.OAuth != nil {
			l.errorf(k("oauth"), "is only used by HTTP servers (url): a stdio server gets its credentials from env; remove the table")
		}
		for _, f := range []string{"headers"} {
			if l.isSet(k(f)) || len(s.Headers) > 0 {
				l.errorf(k(f), "is only used by HTTP servers (url): remove it, or replace command with url")
			}
		}
	case s.URL != "":
		goSet := map[string]bool{"args": len(s.Args) > 0, "env": len(s.Env) > 0, "inherit_env": len(s.InheritEnv) > 0, "cwd": s.Cwd != ""}
		for _, f := range []string{"args", "env", "inherit_env", "cwd"} {
			if l.isSet(k(f)) || goSet[f] {
				l.errorf(k(f), "is only used by stdio servers (command): remove it, or replace url with command")
			}
		}
	}
	if s.Command != "" && strings.ContainsRune(s.Command, 0) {
		l.errorf(k("command"), "must not contain a NUL character")
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			l.errorf(k("args"), "element %d must not contain a NUL character", i+1)
		}
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
			l.errorf(k("url"), "%q is not an http or https URL with a host: write it like \"http://127.0.0.1:3001/mcp\"", redact.URL(s.URL))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		ek := append(k("env"), name)
		if !validEnvName(name) {
			l.errorf(ek, "invalid environment variable name %q: use letters, digits and _, not starting with a digit", name)
		} else if strings.ContainsRune(s.Env[name], 0) {
			l.errorf(ek, "must not contain a NUL character")
		}
	}
	for i, name := range s.InheritEnv {
		if !validEnvName(name) {
			l.errorf(k("inherit_env"), "element %d %q is not a valid environment variable name: use letters, digits and _, not starting with a digit", i+1, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		hk := append(k("headers"), name)
		if !validHeaderName(name) {
			l.errorf(hk, "invalid HTTP header name %q: use letters, digits and !#$%%&'*+-.^_`|~", name)
		} else if !validHeaderValue(s.Headers[name]) {
			l.errorf(hk, "the value must not contain line breaks or other control characters")
		}
	}
	if s.Cwd != "" {
		s.Cwd = resolvePath(l.dir, s.Cwd)
	}
	if s.URL != "" && l.isSet(k("strict_stdout")) {
		l.errorf(k("strict_stdout"), "is only used by stdio servers (command): remove it")
	}
	if s.OAuth != nil && s.URL != "" {
		l.validateOAuth(s, k("oauth"))
	}
	l.timeout(k("timeout"), s.Timeout)
	l.prefix(k("prefix"), s.Prefix)
	if (l.isSet(k("max_output")) && s.MaxOutput == 0) || s.MaxOutput < 0 {
		l.errorf(k("max_output"), "must be greater than 0: remove the key for the default (4MiB)")
	}
	if s.LogLevel != "" && !slices.Contains(LogLevels, s.LogLevel) {
		l.errorf(k("log_level"), "%q is not an MCP log level: use one of %s", s.LogLevel, strings.Join(LogLevels, ", "))
	}
	l.roots(k("roots"), s.Roots)
	l.serverSandbox(s, key)
	s.ToolRules, s.DenyToolRules = l.backendTools(key, s.Tools, s.DenyTools)
	l.validateSupervision(&s.Supervision, key, s.IsStdio())
}

// validateOAuth checks a [servers.NAME.oauth] table and fills in its
// default grant.
func (l *loader) validateOAuth(s *Server, key toml.Key) {
	o := s.OAuth
	k := func(name string) toml.Key { return append(key[:len(key):len(key)], name) }
	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		l.errorf(k("grant"), "%q is not a grant: use %q (a person signs in through a browser) or %q (a machine with client_id and client_secret)", o.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	if o.Grant == GrantClientCredentials {
		if o.ClientID == "" && !l.reported(k("client_id")) {
			l.errorf(key, "grant %q needs client_id and client_secret: set both (the secret as ${VAR})", GrantClientCredentials)
		} else if o.ClientSecret == "" && !l.reported(k("client_secret")) {
			l.errorf(k("client_id"), "grant %q needs client_secret too: set it as ${VAR}", GrantClientCredentials)
		}
		for _, f := range []string{"redirect_port", "client_metadata_url"} {
			if l.isSet(k(f)) {
				l.errorf(k(f), "is only used by grant %q: remove it", GrantAuthorizationCode)
			}
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" && o.Grant == GrantAuthorizationCode {
		l.errorf(k("client_secret"), "is set without client_id: set the client_id it belongs to, or remove it (a client is then registered dynamically)")
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		l.errorf(k("redirect_port"), "%d is out of range: use 1 to 65535, or remove the key for any free port", o.RedirectPort)
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			l.errorf(k("scopes"), "element %d %q is not an OAuth scope: a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749, section 3.3)", i+1, sc)
		}
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			l.errorf(k("client_metadata_url"), "%q is not an https URL with a path: write it like \"https://example.com/toolhost/client.json\"", o.ClientMetadataURL)
		}
	}
	if !validHeaderValue(o.ClientID) {
		l.errorf(k("client_id"), "must not contain line breaks or other control characters")
	}
	for name := range s.Headers {
		if strings.EqualFold(name, "Authorization") {
			l.errorf(append(key[:len(key)-1:len(key)-1], "headers", name), "cannot be combined with [%s]: the OAuth access token is the Authorization header; remove one", key)
		}
	}
}

func (l *loader) validatePlugin(p *Plugin, key toml.Key) {
	k := func(name string) toml.Key { return append(key[:len(key):len(key)], name) }
	l.description(k("description"), p.Description)
	if p.Path == "" {
		if !l.reported(k("path")) && !l.typos[key.String()] {
			l.errorf(key, "path is required: set path to the plugin's .wasm file")
		}
	} else if ociref.Is(p.Path) {
		// An OCI reference stays as written: the host pulls it at start
		// (internal/ociplugin).
		if _, err := ociref.Parse(p.Path); err != nil {
			l.errorf(k("path"), "%v", err)
		}
	} else if i := strings.Index(p.Path, "://"); i > 0 && !strings.ContainsAny(p.Path[:i], "/\\") {
		l.errorf(k("path"), "%q is a URL: path is a .wasm file, or an OCI reference %sREGISTRY/REPO:TAG (%s for a registry on loopback)", p.Path, ociref.Scheme, ociref.SchemeHTTP)
	} else {
		p.Path = resolvePath(l.dir, p.Path)
	}
	if p.SHA256 != "" {
		if _, err := hex.DecodeString(p.SHA256); err != nil || len(p.SHA256) != 64 {
			l.errorf(k("sha256"), "%q is not a SHA-256 digest: write the 64 hex digits printed by sha256sum, or remove the key", p.SHA256)
		} else {
			p.SHA256 = strings.ToLower(p.SHA256)
		}
	}
	switch p.Isolation {
	case "":
		p.Isolation = "pooled"
	case "pooled", "fresh":
	default:
		l.errorf(k("isolation"), "%q is not an isolation mode: use \"pooled\" (instances are reused) or \"fresh\" (a new instance per call)", p.Isolation)
	}
	if p.Instances < 0 || p.Instances > maxInstances {
		l.errorf(k("instances"), "%d is out of range: use 1 to %d, or remove the key for the sandbox default", p.Instances, maxInstances)
	}
	l.allowedHosts(k("allowed_hosts"), p.AllowedHosts)
	p.Mounts = l.allowedPaths(k("allowed_paths"), p.AllowedPaths)
	for i := range p.Mounts {
		p.Mounts[i].Quota = p.MountQuota[p.Mounts[i].Guest]
	}
	for _, guest := range slices.Sorted(maps.Keys(p.MountQuota)) {
		qk := append(k("mount_quota"), guest)
		v, ok := p.AllowedPaths[guest]
		switch {
		case !ok:
			l.errorf(qk, "%q is not a guest path of allowed_paths: name an rw mount", guest)
		case !strings.HasPrefix(v, "rw:"):
			l.errorf(qk, "%q is a read-only mount: a quota applies to rw mounts only", guest)
		case p.MountQuota[guest] == 0:
			l.errorf(qk, "must be greater than 0: remove the entry for no quota")
		}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"max_open_files", p.MaxOpenFiles}, {"max_http_requests", p.MaxHTTPRequests}} {
		if l.isSet(k(c.name)) && (c.v < 1 || c.v > maxPluginCount) {
			l.errorf(k(c.name), "%d is out of range: use 1 to %d, or remove the key for the sandbox default", c.v, maxPluginCount)
		}
	}
	if l.isSet(k("max_http_bytes")) && p.MaxHTTPBytes == 0 {
		l.errorf(k("max_http_bytes"), "must be greater than 0: remove the key for the sandbox default")
	}
	if l.isSet(k("memory")) || p.Memory != 0 {
		switch m := int64(p.Memory); {
		case m <= 0:
			l.errorf(k("memory"), "must be at least 64KiB: remove the key for the sandbox default")
		case m > maxWasmMemory:
			l.errorf(k("memory"), "%s is more than the 4GiB a WebAssembly memory can hold: use at most \"4GiB\"", p.Memory)
		case m%wasmPage != 0:
			near := max(1, (m+wasmPage/2)/wasmPage) * wasmPage
			l.errorf(k("memory"), "%d bytes is not a multiple of 64KiB (the WebAssembly page size): use %q", m, Size(near).String())
		}
	}
	if (l.isSet(k("max_output")) && p.MaxOutput == 0) || p.MaxOutput < 0 {
		l.errorf(k("max_output"), "must be greater than 0: remove the key for the sandbox default")
	}
	l.timeout(k("timeout"), p.Timeout)
	l.prefix(k("prefix"), p.Prefix)
	p.ToolRules, p.DenyToolRules = l.backendTools(key, p.Tools, p.DenyTools)
	l.validateSupervision(&p.Supervision, key, false)
}

// allowedHosts checks an allowed_hosts list (a plugin's or a sandboxed
// server's) and lowercases its entries in place (see hostGlob).
func (l *loader) allowedHosts(key toml.Key, hosts []string) {
	for i, h := range hosts {
		lh, err := hostGlob(h)
		if err != nil {
			l.errorf(key, "element %d %q: %v", i+1, h, err)
			continue
		}
		hosts[i] = lh
	}
}

// allowedPaths parses an allowed_paths table (a plugin's or a sandboxed
// server's): guest path (absolute, clean) → "ro:HOSTDIR", "rw:HOSTDIR" or
// "HOSTDIR" (read-only), the host directory relative to the configuration
// file. It returns the mounts sorted by guest path (no quota).
func (l *loader) allowedPaths(key toml.Key, paths map[string]string) []Mount {
	var mounts []Mount
	for _, guest := range slices.Sorted(maps.Keys(paths)) {
		pk := append(key[:len(key):len(key)], guest)
		if !path.IsAbs(guest) || path.Clean(guest) != guest {
			l.errorf(pk, "guest path %q must be absolute and clean, like \"/data\"", guest)
			continue
		}
		m := Mount{Guest: guest}
		v := paths[guest]
		switch {
		case strings.HasPrefix(v, "rw:"):
			m.ReadWrite, v = true, v[3:]
		case strings.HasPrefix(v, "ro:"):
			v = v[3:]
		}
		if v == "" {
			l.errorf(pk, "no host directory: write \"ro:HOSTDIR\", \"rw:HOSTDIR\" or \"HOSTDIR\" (read-only)")
			continue
		}
		m.Host = resolvePath(l.dir, v)
		mounts = append(mounts, m)
	}
	return mounts
}

// timeout checks a timeout key that is set.
func (l *loader) timeout(key toml.Key, d Duration) {
	if (l.isSet(key) && d == 0) || d < 0 {
		l.errorf(key, "must be greater than 0: remove the key for the default")
	}
}

func (l *loader) prefix(key toml.Key, p *string) {
	if p != nil && !prefixRE.MatchString(*p) {
		l.errorf(key, "invalid prefix %q: use up to 40 letters, digits, _ and -, or \"\" for no prefix", *p)
	}
}

// hostGlob checks one allowed_hosts entry and returns it lowercased. An entry
// is a host name or IP address, where "*" matches any run of characters
// ("*.wikipedia.org"); ports are not part of it (any port of an allowed host
// is allowed).
func hostGlob(h string) (string, error) {
	h = strings.ToLower(h)
	if h == "" {
		return "", fmt.Errorf("empty host: remove it")
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.String(), nil
	}
	if strings.Contains(h, "/") {
		return "", fmt.Errorf("write a host name, not a URL: like \"example.com\" or \"*.example.com\"")
	}
	// An optional :PORT limits the entry to one port ("[::1]:8080" for an
	// IPv6 literal with a port).
	host, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", fmt.Errorf("unclosed [ in an IPv6 literal: write it like \"[::1]:8080\"")
		}
		host, port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil || (port == "" && h[end+1:] != "") {
			return "", fmt.Errorf("invalid IPv6 literal: write it like \"[::1]:8080\"")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
	}
	if port != "" || strings.HasSuffix(h, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("invalid port %q: use a number from 1 to 65535, or leave the port out to allow any", port)
		}
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			return "[" + ip.String() + "]:" + port, nil
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		if port == "" {
			return ip.String(), nil
		}
		return ip.String() + ":" + port, nil
	}
	if len(host) > 253 {
		return "", fmt.Errorf("host name too long (at most 253 characters)")
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '*') {
			if c == '/' {
				return "", fmt.Errorf("write a host name, not a URL: like \"example.com\" or \"*.example.com\"")
			}
			return "", fmt.Errorf("invalid character %q: a host glob is letters, digits, -, . and * (like \"*.example.com\"), with an optional :PORT", c)
		}
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" {
			return "", fmt.Errorf("empty label: write it like \"example.com\" or \"*.example.com\"")
		}
		if len(label) > 63 {
			return "", fmt.Errorf("label %q too long (at most 63 characters)", label)
		}
	}
	if _, err := path.Match(host, ""); err != nil {
		return "", fmt.Errorf("invalid glob: %v", err)
	}
	if port != "" {
		return host + ":" + port, nil
	}
	return host, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110, section 5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// description checks a backend's description: at most MaxDescription bytes,
// valid UTF-8, no control characters but tab (C0, DEL, C1) and no
// U+2028/U+2029 line or paragraph separators (it is printed on one line).
func (l *loader) description(key toml.Key, d string) {
	switch {
	case len(d) > MaxDescription:
		l.errorf(key, "is %d bytes long: keep it to at most %d bytes", len(d), MaxDescription)
	case !utf8.ValidString(d):
		l.errorf(key, "is not valid UTF-8")
	default:
		for _, r := range d {
			if r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
				l.errorf(key, "must not contain line breaks or other control characters (found %U)", r)
				return
			}
		}
	}
}

// validHeaderValue reports whether s has no control characters but tab
// (RFC 9110, section 5.5).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// resolvePath makes p absolute against dir, cleaned.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// LogLevels are the MCP log levels (RFC 5424 severities, MCP 2025-11-25,
// server/utilities/logging), least severe first: what log_level accepts.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// roots checks a roots list: each a file:// URI of an absolute path, once.
func (l *loader) roots(key toml.Key, roots []string) {
	seen := map[string]bool{}
	for i, r := range roots {
		u, err := url.Parse(r)
		switch {
		case err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "":
			l.errorf(key, "element %d %q is not a file:// URI of an absolute path: write it like \"file:///work\"", i+1, r)
		case seen[r]:
			l.errorf(key, "element %d %q is listed twice: remove one", i+1, r)
		}
		seen[r] = true
	}
}

// CheckBackend applies the checks and defaults of a [servers.NAME] table to
// the options of a backend that has no table (host.Host.Add's): its prefix,
// its tool globs (tools, deny_tools; nil tools allows every tool) and its
// supervision, whose unset fields it fills in with the defaults of a
// Streamable HTTP server's. It returns the tool globs as rules, keyed
// "servers.NAME.tools" and "servers.NAME.deny_tools" as a table's would be
// (a refusal names its rule by that key). Errors: an ErrorList, one Error a
// problem, keyed as in a table.
func CheckBackend(name string, sv *Supervision, prefix *string, tools, deny []string) (allow, denied []Rule, err error) {
	l := &loader{dir: "/", bad: map[string]bool{}, typos: map[string]bool{}, validating: true}
	key := toml.Key{"servers", name}
	l.prefix(toml.Key{"servers", name, "prefix"}, prefix)
	allow, denied = l.backendTools(key, tools, deny)
	l.validateSupervision(sv, key, false)
	if len(l.errs) > 0 {
		l.errs.sort()
		return nil, nil, l.errs
	}
	return allow, denied, nil
}
