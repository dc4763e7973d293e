// Package config loads toolhost's TOML configuration into typed, validated
// structs.
//
// Loading is strict: a key the schema does not know, a value of the wrong type,
// an unset ${VAR} without a default, a server with both command and url (or
// neither), an invalid backend name — each is an error that names the key and
// the line it stands on. Everything is checked once, at load; nothing in this
// package can fail later at call time.
//
// Strings may reference environment variables as ${VAR} or ${VAR:-default}
// (the default is used when VAR is unset or empty, as in POSIX sh); "$$"
// stands for a literal "$". Expansion applies to string values only, never to
// keys.
package config

import (
	"regexp"
	"time"
)

// DefaultCallTimeout is the per-call deadline used when neither [host]
// call_timeout nor a backend's timeout is set.
const DefaultCallTimeout = 30 * time.Second

// DefaultInheritEnv is the environment a stdio server inherits from toolhost
// when its inherit_env is not set: the search path, the home directory and the
// locale. Anything else (tokens, cloud credentials) must be passed explicitly
// through env.
var DefaultInheritEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// Config is a loaded, expanded and validated configuration file.
type Config struct {
	// Host holds process-wide settings ([host]).
	Host Host `toml:"host"`

	// Servers are the external MCP servers ([servers.NAME]), keyed by NAME.
	Servers map[string]*Server `toml:"servers"`

	// Plugins are the in-process WebAssembly plugins ([plugins.NAME]), keyed
	// by NAME.
	Plugins map[string]*Plugin `toml:"plugins"`

	// Policy is the global tool policy ([policy]); without the table every
	// tool is allowed (Default "allow").
	Policy Policy `toml:"policy"`

	// Profiles are the named roles ([profiles.NAME]), keyed by NAME.
	Profiles map[string]*Profile `toml:"profiles"`

	// Tools are per-tool options ([tools.NAME]), keyed by catalogue name.
	Tools map[string]*ToolOptions `toml:"tools"`

	// Serve configures `toolhost serve`, the MCP gateway ([serve]).
	Serve Serve `toml:"serve"`

	// Store is where the host keeps its state: the audit trail, grants,
	// rate limit buckets, idempotency results, tool pins, breaker state
	// ([store]; see store.go).
	Store Store `toml:"store"`

	// Code mode (issue 27; config/codemode.go): how run_code runs
	// ([code_mode]); whether a profile gets it is [serve] code_mode and
	// [profiles.NAME] code_mode.
	CodeMode CodeMode `toml:"code_mode" json:",omitzero"`

	// Path is the absolute path of the file the configuration was loaded
	// from; empty when loaded from bytes without a name.
	Path string `toml:"-"`

	// Dir is the directory relative paths in the file are resolved against:
	// the file's directory, or the working directory for unnamed input.
	Dir string `toml:"-"`

	// validated is set by Load, Parse and Validate.
	validated bool

	// file and loc place the problems Check finds, like Load's.
	file string
	loc  *locator
}

// Host is the [host] table.
type Host struct {
	// CallTimeout is the default deadline of one tool call (key call_timeout,
	// default 30s). A backend's timeout overrides it.
	CallTimeout Duration `toml:"call_timeout"`

	// CacheDir is where compiled WebAssembly modules are cached (key
	// cache_dir; default: toolhost/wasm under os.UserCacheDir). Relative paths are
	// resolved against Config.Dir.
	CacheDir string `toml:"cache_dir"`

	// AuditLog is the JSON Lines file every tool call attempt is recorded
	// in (key audit_log; default: none). Relative paths are resolved against
	// Config.Dir. The file is opened for appending when the host starts.
	AuditLog string `toml:"audit_log"`

	// AuditRedact are extra regular expressions (RE2, matched
	// case-insensitively anywhere in a key) naming argument keys whose values
	// are replaced by "[REDACTED]" in audit records, on top of the built-in
	// password|secret|token|key|credential|authorization.
	AuditRedact []string `toml:"audit_redact"`
	// AuditRedactRE is AuditRedact compiled.
	AuditRedactRE []*regexp.Regexp `toml:"-" json:"-"`

	// Roots are the roots offered to every MCP server that asks (key
	// roots; MCP 2025-11-25, client/roots): file:// URIs of absolute
	// paths, such as "file:///work". A server's own roots replace them.
	// Empty (the default): the roots capability is not declared, unless
	// the embedder sets host.Options.Roots.
	Roots []string `toml:"roots"`

	// Sandbox is the sandbox mode of every stdio server whose own sandbox
	// key is not set (key sandbox): SandboxOff (the default),
	// SandboxStrict or SandboxBestEffort. See Server.Sandbox.
	Sandbox string `toml:"sandbox"`

	// LogDirectory, when set (key log_directory; default: none, no log
	// files), is where each backend's log goes: <log_directory>/NAME.log,
	// everything its logger says at Debug and above whatever --log-level
	// is (a server's stderr lines and notifications/message, its
	// lifecycle, sandbox denials, a plugin's log calls), with
	// configuration secrets replaced by [REDACTED]. A relative path is
	// resolved against Config.Dir. The directory is created (0700) when
	// the host starts; files are 0600. See internal/serverlog.
	LogDirectory string `toml:"log_directory" json:",omitempty"`
	// LogMaxSize is the size at which a backend's log file is rotated
	// (key log_max_size; default 10MiB when log_directory is set): a whole
	// number of MiB, 1MiB or more (the rotation counts in MiB).
	LogMaxSize Size `toml:"log_max_size" json:",omitempty"`
	// LogMaxFiles is how many files of a backend's log are kept, the
	// current one included (key log_max_files; default 5 when
	// log_directory is set; 2 to 1000): a rotation that would keep more
	// removes the oldest. At most LogMaxSize × LogMaxFiles per backend.
	LogMaxFiles int `toml:"log_max_files" json:",omitempty"`

	// Tool-definition pinning (issue 25, item 6; config/pins.go).
	// Pin is how every backend's tool definitions are pinned unless its own
	// pin key says otherwise (key pin): PinOff (the default: no pins, no
	// quarantine), PinTrustFirst (a tool's definition is approved the first
	// time it is seen; a later change is quarantined until `toolhost
	// approve`) or PinApprove (a tool is quarantined until approved, and
	// again whenever its definition changes).
	Pin string `toml:"pin" json:",omitempty"`
}

// Defaults of the per-backend log files ([host] log_directory).
const (
	DefaultLogMaxSize  Size = 10 << 20
	DefaultLogMaxFiles      = 5
	// MaxLogFiles bounds log_max_files.
	MaxLogFiles = 1000
)

// Sandbox modes (the sandbox keys of [host] and [servers.NAME]).
const (
	// SandboxOff runs a stdio server unsandboxed, with the default
	// containment (its own PID namespace and /proc, the env scrub).
	SandboxOff = "off"
	// SandboxStrict runs it in the native sandbox (package
	// sandbox/native); a mechanism the kernel does not offer is a start
	// failure that names it, never a silent fallback.
	SandboxStrict = "strict"
	// SandboxBestEffort runs it with every mechanism the kernel offers;
	// toolhost check and status list what is missing.
	SandboxBestEffort = "best-effort"
)

// SandboxModes are the values the sandbox keys accept.
var SandboxModes = []string{SandboxOff, SandboxStrict, SandboxBestEffort}

// Server is one [servers.NAME] table: an external MCP server reached over
// stdio (command set) or Streamable HTTP (url set); exactly one of the two.
type Server struct {
	// Name is NAME from the table header; it matches ^[A-Za-z0-9_-]{1,64}$
	// and is unique across servers and plugins.
	Name string `toml:"-"`

	// Line is the line of the [servers.NAME] header (1-based), for messages.
	Line int `toml:"-"`

	// Enabled (key enabled, default true) set to false disables the
	// server: it stays in the Config and every check still applies to it,
	// but the host starts nothing for it and it contributes no tools,
	// prompts or resources. Nil means true; use IsEnabled.
	Enabled *bool `toml:"enabled" json:",omitempty"`
	// Description is a free-form note for operators, shown by toolhost
	// check (key description; at most MaxDescription bytes, no control
	// characters but tab, no U+2028/U+2029). Default empty.
	Description string `toml:"description" json:",omitempty"`

	// Command is the program to run (looked up in PATH when it has no slash).
	Command string `toml:"command"`
	// Args are its arguments.
	Args []string `toml:"args"`
	// Env adds variables to the child's environment; values may use ${VAR}.
	Env map[string]string `toml:"env"`
	// InheritEnv names the variables copied from toolhost's own environment
	// (default DefaultInheritEnv; an empty list inherits nothing).
	InheritEnv []string `toml:"inherit_env"`
	// Cwd is the child's working directory (default: toolhost's). Relative
	// paths are resolved against Config.Dir.
	Cwd string `toml:"cwd"`
	// StrictStdout (stdio only) makes a stdout line that is not JSON a
	// protocol violation that takes the server down, as the spec says.
	// Default false: such lines (start-up banners) are skipped and logged.
	StrictStdout bool `toml:"strict_stdout"`

	// URL is the Streamable HTTP endpoint (http or https).
	URL string `toml:"url"`
	// Headers are added to every HTTP request; values may use ${VAR}.
	Headers map[string]string `toml:"headers"`
	// OAuth, the [servers.NAME.oauth] table (HTTP servers only), makes
	// toolhost get OAuth 2.1 access tokens for the server (MCP 2025-11-25,
	// basic/authorization). Nil: no OAuth (a static Authorization header
	// in headers still works).
	OAuth *OAuth `toml:"oauth" json:",omitempty"`

	// Timeout overrides [host] call_timeout for this server's calls.
	Timeout Duration `toml:"timeout"`

	// Sandbox is a stdio server's sandbox mode (key sandbox): SandboxOff,
	// SandboxStrict or SandboxBestEffort. Unset, it is [host] sandbox,
	// itself default "off"; Load fills in the effective mode of every
	// stdio server (empty for an HTTP server, which has no sandbox key).
	Sandbox string `toml:"sandbox" json:",omitempty"`
	// AllowedPaths, AllowedHosts and Memory are the plugins' keys, with
	// the same grammar and checks (see Plugin), enforced on a sandboxed
	// stdio server's process by the native sandbox; Mounts is
	// AllowedPaths parsed, sorted by Guest (no Quota: mount_quota is not
	// supported for servers). Memory caps the server's memory (cgroup
	// memory, else its address space; 0: the sandbox's default, 1GiB).
	// They need a sandbox: on a server whose effective sandbox is "off"
	// they are errors, since nothing would enforce them.
	AllowedPaths map[string]string `toml:"allowed_paths" json:",omitempty"`
	Mounts       []Mount           `toml:"-" json:",omitempty"`
	AllowedHosts []string          `toml:"allowed_hosts" json:",omitempty"`
	Memory       Size              `toml:"memory" json:",omitempty"`
	// Pids caps the processes and threads of a sandboxed server, together
	// (key pids, at least 1; 0: the sandbox's default, 256).
	Pids int `toml:"pids" json:",omitempty"`
	// MountQuota is only read to be refused with a clear error: the native
	// sandbox has no per-mount quota.
	MountQuota map[string]Size `toml:"mount_quota" json:"-"`

	// LogLevel is sent to the server with logging/setLevel after every
	// initialize when it declares the logging capability (key log_level):
	// debug, info, notice, warning, error, critical, alert or emergency.
	// The server's notifications/message go to its logger at the
	// matching level either way. Empty (the default): nothing is sent.
	LogLevel string `toml:"log_level"`

	// Roots replace [host] roots for this server (key roots; same form).
	// An empty list offers none.
	Roots []string `toml:"roots"`

	// Prefix is prepended to the server's tool names in the catalogue. Nil
	// means the default "NAME__"; an empty string means no prefix.
	Prefix *string `toml:"prefix"`

	// MaxOutput caps the JSON encoding of one result (0 means the host's
	// default, host.DefaultMaxOutput: 4 MiB, as for plugins). A larger
	// result is an error, never truncated.
	MaxOutput Size `toml:"max_output"`

	// Tools are globs over the server's own tool names: only matching tools
	// are registered (nil: every tool). DenyTools removes tools; it wins.
	Tools     []string `toml:"tools"`
	DenyTools []string `toml:"deny_tools"`
	// ToolRules and DenyToolRules are Tools and DenyTools compiled.
	ToolRules     []Rule `toml:"-" json:"-"`
	DenyToolRules []Rule `toml:"-" json:"-"`

	// Supervision: start policy, health checks, restarts and the circuit
	// breaker (keys start, startup_timeout, idle_timeout, health_*,
	// restart_backoff, max_restarts, restart_window, circuit_breaker).
	Supervision
}

// OAuth grants (OAuth.Grant).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuth is a [servers.NAME.oauth] table.
type OAuth struct {
	// Grant is "authorization_code" (the default: a person logs in with
	// `toolhost login NAME`, in a browser, with PKCE; the token is stored
	// and refreshed) or "client_credentials" (a machine: client_id and
	// client_secret are required; nothing is stored).
	Grant string `toml:"grant"`
	// ClientID is a client registered with the authorization server in
	// advance. Empty: the client is registered dynamically (RFC 7591) at
	// login, or ClientMetadataURL is used.
	ClientID string `toml:"client_id"`
	// ClientSecret is ClientID's secret (confidential clients); use
	// ${VAR}. Never logged, never in status or --json output, and left
	// out of this struct's JSON encoding.
	ClientSecret string `toml:"client_secret" json:"-"`
	// Scopes are the scopes to request. Empty: what the server asks for
	// (its WWW-Authenticate challenge, else its protected-resource
	// metadata's scopes_supported).
	Scopes []string `toml:"scopes"`
	// RedirectPort is the loopback port `toolhost login` listens on for
	// the redirect (http://127.0.0.1:PORT/callback). 0 (the default): any
	// free port. Set it when the client was registered with a fixed
	// redirect URI.
	RedirectPort int `toml:"redirect_port"`
	// ClientName is the client_name of a dynamic registration (default
	// "toolhost").
	ClientName string `toml:"client_name"`
	// ClientMetadataURL is an HTTPS URL, with a path, of a Client ID
	// Metadata Document describing toolhost as a client; used as the
	// client_id where the authorization server supports that.
	ClientMetadataURL string `toml:"client_metadata_url"`
}

// IsStdio reports whether the server is reached over stdio.
func (s *Server) IsStdio() bool { return s.Command != "" }

// Plugin is one [plugins.NAME] table: an in-process WebAssembly plugin.
type Plugin struct {
	// Name is NAME from the table header (same rules as Server.Name).
	Name string `toml:"-"`
	// Line is the line of the [plugins.NAME] header (1-based).
	Line int `toml:"-"`

	// Enabled and Description are as in Server.
	Enabled     *bool  `toml:"enabled" json:",omitempty"`
	Description string `toml:"description" json:",omitempty"`

	// Path is the .wasm file; relative paths are resolved against Config.Dir
	// at load (the resolved path is stored here). Or it is an OCI
	// reference, kept as written: oci://REGISTRY/REPO:TAG or
	// oci://REGISTRY/REPO@sha256:HEX (HTTPS), or oci+http://... for a
	// registry on loopback only; the host pulls it into [host] cache_dir
	// at each start (see internal/ociplugin). A malformed reference, or
	// another URL, is a load error.
	Path string `toml:"path"`
	// SHA256 optionally pins the file's digest (64 hex digits); for an OCI
	// path, the module's digest (the wasm layer's digest).
	SHA256 string `toml:"sha256"`

	// AllowedHosts are host-name globs the plugin may reach over HTTP
	// ("example.com", "*.wikipedia.org"), optionally limited to one port
	// ("example.com:8443", "[::1]:8080"). Empty: no network. Loopback,
	// private and metadata addresses are refused unless an entry names that
	// host or IP literally (see docs/PLUGIN-ABI.md).
	AllowedHosts []string `toml:"allowed_hosts"`
	// AllowedPaths maps a guest path to a host directory, written
	// "ro:HOSTPATH", "rw:HOSTPATH" or plain "HOSTPATH" (read-only). Parsed
	// into Mounts at load.
	AllowedPaths map[string]string `toml:"allowed_paths"`
	// Mounts is AllowedPaths parsed, sorted by Guest.
	Mounts []Mount `toml:"-"`

	// Memory caps the module's linear memory (e.g. "64MiB"; 0 means the
	// sandbox default, 256MiB).
	Memory Size `toml:"memory"`
	// Timeout overrides [host] call_timeout for this plugin's calls.
	Timeout Duration `toml:"timeout"`
	// Instances is the size of the instance pool (0 means the sandbox
	// default).
	Instances int `toml:"instances"`
	// Isolation is "pooled" (default: instances are reused, guest globals
	// persist between calls) or "fresh" (a new instance for every call).
	Isolation string `toml:"isolation"`
	// MaxOutput caps one result's size (0 means the sandbox default,
	// 4 MiB).
	MaxOutput Size `toml:"max_output"`
	// MaxOpenFiles caps the files (and directories) one instance may hold
	// open in its mounts at once (0 means the sandbox default, 128).
	MaxOpenFiles int `toml:"max_open_files"`
	// MaxHTTPRequests caps the http_request calls of one plugin call (0
	// means the sandbox default, 64).
	MaxHTTPRequests int `toml:"max_http_requests"`
	// MaxHTTPBytes caps the response bytes (bodies) of all http_request
	// calls of one plugin call (0 means the sandbox default, 64MiB).
	MaxHTTPBytes Size `toml:"max_http_bytes"`
	// MountQuota optionally caps the bytes a plugin may store under an rw
	// mount, keyed by the guest path of an allowed_paths entry ("/out" =
	// "100MiB"). Parsed into Mounts[i].Quota at load. Unset: no quota.
	MountQuota map[string]Size `toml:"mount_quota"`
	// Config is key/value configuration visible to this plugin only; values
	// may use ${VAR}.
	Config map[string]string `toml:"config"`

	// Prefix works as Server.Prefix.
	Prefix *string `toml:"prefix"`

	// Tools, DenyTools, ToolRules and DenyToolRules work as Server's.
	Tools         []string `toml:"tools"`
	DenyTools     []string `toml:"deny_tools"`
	ToolRules     []Rule   `toml:"-" json:"-"`
	DenyToolRules []Rule   `toml:"-" json:"-"`

	// Supervision works as Server's (idle_timeout excepted).
	Supervision
}

// Mount is one allowed_paths entry.
type Mount struct {
	// Guest is the absolute path the plugin sees.
	Guest string
	// Host is the absolute host directory it maps to.
	Host string
	// ReadWrite is true for "rw:" entries.
	ReadWrite bool
	// Quota caps the bytes of the files under the mount (mount_quota; 0:
	// none). Only rw mounts may have one.
	Quota Size
}

// MaxDescription is the longest description (key description of
// [servers.NAME] and [plugins.NAME]) Load accepts, in bytes.
const MaxDescription = 1024

// IsEnabled reports whether the server runs: its enabled key is unset or
// true.
func (s *Server) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// IsEnabled reports whether the plugin runs: its enabled key is unset or
// true.
func (p *Plugin) IsEnabled() bool { return p.Enabled == nil || *p.Enabled }

// BackendEnabled reports whether the backend NAME is configured and enabled.
func (c *Config) BackendEnabled(name string) bool {
	if s, ok := c.Servers[name]; ok {
		return s.IsEnabled()
	}
	if p, ok := c.Plugins[name]; ok {
		return p.IsEnabled()
	}
	return false
}
