package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// testEnv is the environment of most tests.
var testEnv = map[string]string{
	"TOKEN": "s3cret",
	"EMPTY": "",
	"HOME":  "/home/test",
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func testOptions() *Options {
	return &Options{Name: "test.toml", Dir: "/base", LookupEnv: lookupIn(testEnv)}
}

// want is one expected error: its line, its key and a part of its message.
type want struct {
	line int
	key  string
	msg  string
}

func (w want) String() string { return fmt.Sprintf("%d %s: ...%s...", w.line, w.key, w.msg) }

func TestParseErrors(t *testing.T) {
	const stdio = "[servers.s]\ncommand = \"x\"\n"
	tests := []struct {
		name string
		src  string
		want []want
	}{
		// Syntax and types.
		{"syntax error", "[servers.a]\ncommand = \"x\"\nargs = [\"a\",\n\n= 3\n", []want{{5, "servers.a.args", "invalid TOML: expected value"}}},
		{"unterminated string", "[host]\ncache_dir = \"abc\n", []want{{2, "host.cache_dir", "invalid TOML: strings cannot contain newlines"}}},
		{"duplicate key", "[host]\ncache_dir = \"a\"\ncache_dir = \"b\"\n", []want{{3, "host.cache_dir", "already been defined"}}},
		{"unknown top-level key", "hots = 1\n", []want{{1, "hots", `did you mean "host"`}}},
		{"unknown top-level table", "\n[extra]\nx = 1\n", []want{{2, "extra", "keys allowed here are host, plugins, policy, profiles, serve, servers"}}},
		{"unknown server key", "[servers.everything]\ncommand = \"npx\"\ncomand = \"npx\"\n", []want{{3, "servers.everything.comand", `did you mean "command"`}}},
		{"unknown key is case-sensitive", "[servers.a]\nCommand = \"npx\"\n", []want{{2, "servers.a.Command", `did you mean "command"`}}},
		{"unknown key in quoted table", "[servers.a]\ncommand = \"x\"\n[plugins.\"p\"]\npath = \"p.wasm\"\n\"my key\" = 1\n", []want{{5, `plugins.p."my key"`, "unknown key"}}},
		{"unknown nested table reported once", stdio + "[servers.s.extra]\na = 1\nb = 2\n", []want{{3, "servers.s.extra", "unknown key"}}},
		{"unknown dotted key", stdio + "extra.a = 1\n", []want{{3, "servers.s.extra", "unknown key"}}},
		{"unknown host key", "[host]\ntimeout = \"1s\"\n", []want{{2, "host.timeout", "unknown key"}}},
		{"wrong type string", "[servers.a]\ncommand = 3\n", []want{{2, "servers.a.command", "must be a string; got the integer 3"}}},
		{"wrong type array", "[servers.a]\ncommand = \"x\"\nargs = \"-y\"\n", []want{{3, "servers.a.args", "must be an array of strings"}}},
		{"wrong element type", "[servers.a]\ncommand = \"x\"\nargs = [\n  \"a\",\n  2,\n]\n", []want{{3, "servers.a.args", "element 2 must be a string"}}},
		{"wrong type table", "[servers.a]\ncommand = \"x\"\nenv = [\"A\"]\n", []want{{3, "servers.a.env", "must be a table of strings"}}},
		{"wrong map value type", "[servers.a]\ncommand = \"x\"\nenv = { A = 1 }\n", []want{{3, "servers.a.env.A", "must be a string"}}},
		{"wrong type int", "[plugins.p]\npath = \"p.wasm\"\ninstances = \"4\"\n", []want{{3, "plugins.p.instances", "must be an integer"}}},
		{"wrong type duration", "[plugins.p]\npath = \"p.wasm\"\ntimeout = 5\n", []want{{3, "plugins.p.timeout", "with a unit"}}},
		{"bad duration", "[host]\ncall_timeout = \"5 parsecs\"\n", []want{{2, "host.call_timeout", "invalid duration"}}},
		{"negative duration", "[host]\ncall_timeout = \"-5s\"\n", []want{{2, "host.call_timeout", "must not be negative"}}},
		{"bad size", "[plugins.p]\npath = \"p.wasm\"\nmemory = \"64 potatoes\"\n", []want{{3, "plugins.p.memory", "invalid size"}}},
		{"negative size", "[plugins.p]\npath = \"p.wasm\"\nmax_output = -1\n", []want{{3, "plugins.p.max_output", "must not be negative"}}},
		{"server not a table", "[servers]\na = \"npx\"\n", []want{{2, "servers.a", "must be a table"}}},
		{"servers not a table", "servers = 1\n", []want{{1, "servers", "must be a table of [servers.NAME] tables"}}},
		{"array of tables", "[[servers]]\ncommand = \"x\"\n", []want{{1, "servers", "must be a table of [servers.NAME] tables"}}},
		{"all errors reported, sorted", "[plugins.p]\npath = 1\ninstances = \"x\"\n[servers.a]\ncommand = 1\n", []want{
			{2, "plugins.p.path", "must be a string"}, {3, "plugins.p.instances", "must be an integer"}, {5, "servers.a.command", "must be a string"}}},

		// Policy and profiles.
		{"invalid policy glob", "[policy]\nallow = [\"ok__*\"]\ndeny = [\n  \"a__*\",\n  \"fs__[read\",\n]\n", []want{{3, "policy.deny", `element 2: invalid glob "fs__[read"`}}},
		{"invalid profile glob", "[profiles.review]\nallow = [\"{a,b\"]\n", []want{{2, "profiles.review.allow", `invalid glob "{a,b"`}}},
		{"empty glob", "[policy]\ndeny = [\"\"]\n", []want{{2, "policy.deny", "empty glob"}}},
		{"bad policy default", "[policy]\ndefault = \"maybe\"\n", []want{{2, "policy.default", `use "allow" or "deny"`}}},
		{"unknown policy key", "[policy]\nalow = []\n", []want{{2, "policy.alow", `did you mean "allow"`}}},
		{"profile requires unknown backend", stdio + "[profiles.review]\nrequires = [\"s\", \"nope\"]\n", []want{{4, "profiles.review.requires", `element 2: no backend named "nope"`}}},
		{"profile recommends unknown backend", stdio + "[profiles.review]\nrecommends = [\"fs\"]\n", []want{{4, "profiles.review.recommends", `no backend named "fs"`}}},
		{"invalid backend tools glob", stdio + "tools = [\"read_[\"]\n", []want{{3, "servers.s.tools", "invalid glob"}}},
		{"empty backend tools", stdio + "tools = []\n", []want{{3, "servers.s.tools", "allows no tool"}}},
		{"glob that never matches", "[policy]\ndeny = [\"fs.read_*\"]\n", []want{{2, "policy.deny", `character '.' is never in a tool name`}}},
		{"invalid deny_tools glob", "[plugins.p]\npath = \"p.wasm\"\ndeny_tools = [\"{\"]\n", []want{{3, "plugins.p.deny_tools", "invalid glob"}}},
		{"zero server max_output", stdio + "max_output = 0\n", []want{{3, "servers.s.max_output", "greater than 0"}}},
		{"bad audit_redact", "[host]\naudit_redact = [\"(\"]\n", []want{{2, "host.audit_redact", "not a regular expression"}}},

		// Expansion.
		{"unset variable", "[servers.a]\ncommand = \"x\"\nenv = { K = \"${NOPE}\" }\n", []want{{3, "servers.a.env.K", "environment variable NOPE is not set"}}},
		{"unset variable in array", "[servers.a]\ncommand = \"x\"\nargs = [\"--token\", \"${NOPE}\"]\n", []want{{3, "servers.a.args", "NOPE is not set"}}},
		{"unset variable in url", "[servers.a]\nurl = \"http://${NOPE}/mcp\"\n", []want{{2, "servers.a.url", "NOPE is not set"}}},
		{"malformed reference", "[servers.a]\ncommand = \"${A-B}\"\n", []want{{2, "servers.a.command", "malformed reference"}}},
		{"empty reference", "[servers.a]\ncommand = \"${}\"\n", []want{{2, "servers.a.command", "empty reference"}}},
		{"unterminated reference", "[servers.a]\ncommand = \"x${\"\n", []want{{2, "servers.a.command", "unterminated"}}},
		{"unset variable in duration", "[host]\ncall_timeout = \"${NOPE}\"\n", []want{{2, "host.call_timeout", "NOPE is not set"}}},

		// Names.
		{"name with __", "[servers.a__b]\ncommand = \"x\"\n", []want{{1, "servers.a__b", `must not contain "__"`}}},
		{"name with dot", "[servers.\"a.b\"]\ncommand = \"x\"\n", []want{{1, `servers."a.b"`, "invalid name"}}},
		{"name too long", "[plugins." + strings.Repeat("p", 65) + "]\npath = \"x\"\n", []want{{1, "plugins." + strings.Repeat("p", 65), "1 to 64"}}},
		{"duplicate name", "[servers.fs]\ncommand = \"x\"\n\n[plugins.fs]\npath = \"fs.wasm\"\n", []want{{4, "plugins.fs", `already used by servers.fs (line 1)`}}},

		// Servers.
		{"both command and url", "[servers.a]\ncommand = \"x\"\nurl = \"http://h/\"\n", []want{{1, "servers.a", "set exactly one of command"}}},
		{"neither command nor url", "\n[servers.a]\nargs = []\n", []want{{2, "servers.a", "set exactly one of command"}}},
		{"bad url scheme", "[servers.a]\nurl = \"ftp://h/\"\n", []want{{2, "servers.a.url", "not an http or https URL"}}},
		{"url without host", "[servers.a]\nurl = \"http:///mcp\"\n", []want{{2, "servers.a.url", "not an http or https URL"}}},
		{"relative url", "[servers.a]\nurl = \"/mcp\"\n", []want{{2, "servers.a.url", "not an http or https URL"}}},
		{"headers on stdio", "[servers.a]\ncommand = \"x\"\nheaders = { A = \"b\" }\n", []want{{3, "servers.a.headers", "only used by HTTP servers"}}},
		{"args on http", "[servers.a]\nurl = \"http://h/\"\nargs = [\"x\"]\n", []want{{3, "servers.a.args", "only used by stdio servers"}}},
		{"bad env name", "[servers.a]\ncommand = \"x\"\n[servers.a.env]\nOK = \"1\"\n\"1BAD\" = \"2\"\n", []want{{5, `servers.a.env.1BAD`, "invalid environment variable name"}}},
		{"bad inherit_env", "[servers.a]\ncommand = \"x\"\ninherit_env = [\"PATH\", \"A=B\"]\n", []want{{3, "servers.a.inherit_env", `element 2 "A=B"`}}},
		{"bad header name", "[servers.a]\nurl = \"http://h/\"\nheaders = { \"Bad Header\" = \"x\" }\n", []want{{3, `servers.a.headers."Bad Header"`, "invalid HTTP header name"}}},
		{"header injection", "[servers.a]\nurl = \"http://h/\"\nheaders = { X = \"a\\r\\nEvil: 1\" }\n", []want{{3, "servers.a.headers.X", "line breaks"}}},
		{"NUL in args", "[servers.a]\ncommand = \"x\"\nargs = [\"a\\u0000b\"]\n", []want{{3, "servers.a.args", "NUL"}}},
		{"zero server timeout", "[servers.a]\ncommand = \"x\"\ntimeout = \"0s\"\n", []want{{3, "servers.a.timeout", "remove the key for the default"}}},
		{"zero call_timeout", "[host]\ncall_timeout = \"0s\"\n", []want{{2, "host.call_timeout", "remove the key for the default"}}},
		{"bad prefix", "[servers.a]\ncommand = \"x\"\nprefix = \"a.b\"\n", []want{{3, "servers.a.prefix", "invalid prefix"}}},

		// Plugins.
		{"path required", "[plugins.p]\ninstances = 2\n", []want{{1, "plugins.p", "path is required"}}},
		{"bad sha256", "[plugins.p]\npath = \"p.wasm\"\nsha256 = \"abc\"\n", []want{{3, "plugins.p.sha256", "64 hex digits"}}},
		{"bad isolation", "[plugins.p]\npath = \"p.wasm\"\nisolation = \"shared\"\n", []want{{3, "plugins.p.isolation", `"pooled"`}}},
		{"negative instances", "[plugins.p]\npath = \"p.wasm\"\ninstances = -1\n", []want{{3, "plugins.p.instances", "out of range"}}},
		{"too many instances", "[plugins.p]\npath = \"p.wasm\"\ninstances = 257\n", []want{{3, "plugins.p.instances", "out of range"}}},
		{"bad host glob", "[plugins.p]\npath = \"p.wasm\"\nallowed_hosts = [\n  \"ok.com\",\n  \"bad host\",\n]\n", []want{{3, "plugins.p.allowed_hosts", `element 2 "bad host"`}}},
		{"host with bad port", "[plugins.p]\npath = \"p.wasm\"\nallowed_hosts = [\"a.com:99999\"]\n", []want{{3, "plugins.p.allowed_hosts", "invalid port"}}},
		{"host URL", "[plugins.p]\npath = \"p.wasm\"\nallowed_hosts = [\"https//a.com/\"]\n", []want{{3, "plugins.p.allowed_hosts", "not a URL"}}},
		{"host empty label", "[plugins.p]\npath = \"p.wasm\"\nallowed_hosts = [\".a.com\"]\n", []want{{3, "plugins.p.allowed_hosts", "empty label"}}},
		{"relative guest path", "[plugins.p]\npath = \"p.wasm\"\n[plugins.p.allowed_paths]\n\"/ok\" = \"x\"\n\"data\" = \"ro:x\"\n", []want{{5, "plugins.p.allowed_paths.data", "absolute and clean"}}},
		{"unclean guest path", "[plugins.p]\npath = \"p.wasm\"\nallowed_paths = { \"/a/../b\" = \"x\" }\n", []want{{3, `plugins.p.allowed_paths."/a/../b"`, "absolute and clean"}}},
		{"empty host path", "[plugins.p]\npath = \"p.wasm\"\nallowed_paths = { \"/a\" = \"rw:\" }\n", []want{{3, `plugins.p.allowed_paths."/a"`, "no host directory"}}},
		{"memory not a page multiple", "[plugins.p]\npath = \"p.wasm\"\nmemory = \"100KB\"\n", []want{{3, "plugins.p.memory", `use "128KiB"`}}},
		{"memory below a page", "[plugins.p]\npath = \"p.wasm\"\nmemory = 1000\n", []want{{3, "plugins.p.memory", `use "64KiB"`}}},
		{"memory zero", "[plugins.p]\npath = \"p.wasm\"\nmemory = \"0\"\n", []want{{3, "plugins.p.memory", "remove the key"}}},
		{"memory too large", "[plugins.p]\npath = \"p.wasm\"\nmemory = \"5GiB\"\n", []want{{3, "plugins.p.memory", "4GiB"}}},
		{"max_output zero", "[plugins.p]\npath = \"p.wasm\"\nmax_output = 0\n", []want{{3, "plugins.p.max_output", "greater than 0"}}},
		{"zero plugin timeout", "[plugins.p]\npath = \"p.wasm\"\ntimeout = \"0ms\"\n", []want{{3, "plugins.p.timeout", "remove the key"}}},

		// Positions in tricky layouts.
		{"key after multi-line array", "[servers.a]\ncommand = \"x\"\nargs = [\n  \"[servers.b]\",\n  \"x = 1\",\n]\nbogus = 1\n", []want{{7, "servers.a.bogus", "unknown key"}}},
		{"key after multi-line string", "[plugins.p]\npath = \"p.wasm\"\ninstances = 1\ndesc = \"\"\"x\n[plugins.q]\nbogus = 2\\\n  \\\"\"\"\"\nbogus = 1\n", []want{{4, "plugins.p.desc", "unknown key"}, {8, "plugins.p.bogus", "unknown key"}}},
		{"key after multi-line literal", "[servers.a]\ncommand = '''\n[servers.b]\nbogus = 2\n'''\nbogus = 1\n", []want{{6, "servers.a.bogus", "unknown key"}}},
		{"multi-line inline table", "[servers.a]\ncommand = \"x\"\nenv = {\n  A = \"1\",\n  B = \"${NOPE}\",\n}\n", []want{{5, "servers.a.env.B", "NOPE is not set"}}},
		{"dotted keys", "[servers]\na.command = \"x\"\na.env.K = \"${NOPE}\"\n", []want{{3, "servers.a.env.K", "NOPE is not set"}}},
		{"top-level dotted keys", "servers.a.command = \"x\"\nservers.a.bogus = 1\n", []want{{2, "servers.a.bogus", "unknown key"}}},
		{"quoted dotted header", "[plugins.\"p\"]\npath = \"p.wasm\"\n[plugins.\"p\".allowed_paths]\n\"/a.b\" = \"\"\n", []want{{4, `plugins.p.allowed_paths."/a.b"`, "no host directory"}}},
		{"escaped quotes in key", "[servers.a]\ncommand = \"x\"\nenv = { \"A\\\"B\" = \"1\" }\n", []want{{3, `servers.a.env."A\"B"`, "invalid environment variable name"}}},
		{"comment with brackets", "[servers.a]\ncommand = \"x\" # [servers.b]\n# [servers.c]\nbogus = 1\n", []want{{4, "servers.a.bogus", "unknown key"}}},
		{"header declared after its child", "[servers.a.env]\nK = \"v\"\n\n[servers.a]\ncommand = \"x\"\nurl = \"http://h/\"\n", []want{{4, "servers.a", "has both command and url"}}},
		{"typo suppresses the missing-key error", "[plugins.p]\npaht = \"p.wasm\"\n", []want{{2, "plugins.p.paht", `did you mean "path"`}}},
		{"CRLF line ends", "[servers.a]\r\ncommand = \"x\"\r\n\r\nbogus = 1\r\n", []want{{4, "servers.a.bogus", "unknown key"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.src), testOptions())
			if tt.want == nil {
				return // documents a layout only
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want errors %v; got config %+v", tt.want, cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config with an error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %T is not an ErrorList: %v", err, err)
			}
			var first *Error
			if !errors.As(err, &first) || first != list[0] {
				t.Errorf("errors.As(*Error) = %v, want the first error of the list", first)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("got %d errors, want %d (%v):\n%v", len(list), len(tt.want), tt.want, err)
			}
			for i, w := range tt.want {
				e := list[i]
				if e.Line != w.line || e.Key != w.key || !strings.Contains(e.Msg, w.msg) || e.File != "test.toml" {
					t.Errorf("error %d = {File:%q Line:%d Key:%q Msg:%q}, want %v", i, e.File, e.Line, e.Key, e.Msg, w)
				}
			}
		})
	}
}

func TestParseDefaultsAndResolution(t *testing.T) {
	src := `
[host]
cache_dir = "cache/../wasm-cache"

[servers.local]
command = "npx"
cwd = "work"

[servers.remote]
url = "https://example.com/mcp"
prefix = ""

[plugins.p]
path = "plugins/p.wasm"
sha256 = "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
allowed_hosts = ["*.Example.COM", "127.0.0.1"]
allowed_paths = { "/z" = "rw:/abs/z", "/a" = "./a", "/m" = "ro:m" }
memory = 131072
`
	cfg, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Host.CallTimeout.Std(); got != DefaultCallTimeout {
		t.Errorf("CallTimeout = %v, want %v", got, DefaultCallTimeout)
	}
	if got, want := cfg.Host.CacheDir, "/base/wasm-cache"; got != want {
		t.Errorf("CacheDir = %q, want %q", got, want)
	}
	if got := cfg.Dir; got != "/base" {
		t.Errorf("Dir = %q", got)
	}
	if got := cfg.Path; got != "/base/test.toml" {
		t.Errorf("Path = %q", got)
	}
	local := cfg.Servers["local"]
	if local.Name != "local" || local.Line != 5 || !local.IsStdio() || local.Cwd != "/base/work" || local.InheritEnv != nil || local.Prefix != nil {
		t.Errorf("servers.local = %+v", local)
	}
	remote := cfg.Servers["remote"]
	if remote.Line != 9 || remote.IsStdio() || remote.Prefix == nil || *remote.Prefix != "" {
		t.Errorf("servers.remote = %+v", remote)
	}
	p := cfg.Plugins["p"]
	if p.Line != 13 || p.Path != "/base/plugins/p.wasm" || p.Isolation != "pooled" || p.Memory != 128<<10 {
		t.Errorf("plugins.p = %+v", p)
	}
	if want := strings.ToLower("ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"); p.SHA256 != want {
		t.Errorf("SHA256 = %q, want lowercase", p.SHA256)
	}
	if want := []string{"*.example.com", "127.0.0.1"}; !slices.Equal(p.AllowedHosts, want) {
		t.Errorf("AllowedHosts = %q, want %q", p.AllowedHosts, want)
	}
	wantMounts := []Mount{{Guest: "/a", Host: "/base/a"}, {Guest: "/m", Host: "/base/m"}, {Guest: "/z", Host: "/abs/z", ReadWrite: true}}
	if !reflect.DeepEqual(p.Mounts, wantMounts) {
		t.Errorf("Mounts = %+v, want %+v", p.Mounts, wantMounts)
	}
	if got, want := cfg.ServerNames(), []string{"local", "remote"}; !slices.Equal(got, want) {
		t.Errorf("ServerNames = %q", got)
	}
	if got, want := cfg.PluginNames(), []string{"p"}; !slices.Equal(got, want) {
		t.Errorf("PluginNames = %q", got)
	}
	if got, want := cfg.Backends(), []string{"local", "p", "remote"}; !slices.Equal(got, want) {
		t.Errorf("Backends = %q", got)
	}
}

func TestParseEmpty(t *testing.T) {
	cfg, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if cfg.Dir != wd || cfg.Path != "" || cfg.Servers == nil || cfg.Plugins == nil || cfg.Host.CallTimeout.Std() != DefaultCallTimeout {
		t.Errorf("Parse(nil) = %+v", cfg)
	}
	if len(cfg.Backends()) != 0 {
		t.Errorf("Backends = %q", cfg.Backends())
	}
}

func TestParseInheritEnvEmpty(t *testing.T) {
	cfg, err := Parse([]byte("[servers.a]\ncommand = \"x\"\ninherit_env = []\n"), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["a"].InheritEnv; got == nil || len(got) != 0 {
		t.Errorf("InheritEnv = %#v, want empty and non-nil (inherit nothing)", got)
	}
}

func TestParseExpansion(t *testing.T) {
	src := `
[host]
call_timeout = "${CALL_TIMEOUT:-45s}"

[servers.a]
command = "${HOME}/bin/tool"
args = ["--token=${TOKEN}", "$$HOME", "$HOME", "cost: 5$", "${EMPTY:-fallback}", "${UNSET:-${TOKEN}}"]
env = { K = "${TOKEN}", E = "${EMPTY}" }
cwd = "${UNSET:-sub}"

[plugins.p]
path = "${UNSET:-p.wasm}"
memory = "${MEM:-1MiB}"
config = { "${TOKEN}" = "${TOKEN}" }
allowed_paths = { "/data" = "ro:${HOME}/data" }
`
	cfg, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Servers["a"]
	if a.Command != "/home/test/bin/tool" {
		t.Errorf("Command = %q", a.Command)
	}
	wantArgs := []string{"--token=s3cret", "$HOME", "$HOME", "cost: 5$", "fallback", "s3cret"}
	if !slices.Equal(a.Args, wantArgs) {
		t.Errorf("Args = %q, want %q", a.Args, wantArgs)
	}
	if a.Env["K"] != "s3cret" || a.Env["E"] != "" || a.Cwd != "/base/sub" {
		t.Errorf("Env = %q, Cwd = %q", a.Env, a.Cwd)
	}
	if got := cfg.Host.CallTimeout.Std(); got != 45*time.Second {
		t.Errorf("CallTimeout = %v", got)
	}
	p := cfg.Plugins["p"]
	if p.Path != "/base/p.wasm" || p.Memory != 1<<20 || p.Mounts[0].Host != "/home/test/data" {
		t.Errorf("plugin = %+v", p)
	}
	if got := p.Config["${TOKEN}"]; got != "s3cret" {
		t.Errorf("Config = %q: keys must not be expanded, values must", p.Config)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "toolhost.toml")
	if err := os.WriteFile(file, []byte("[plugins.p]\npath = \"p.wasm\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, &Options{Dir: "/ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != file || cfg.Dir != dir || cfg.Plugins["p"].Path != filepath.Join(dir, "p.wasm") {
		t.Errorf("Load = Path %q Dir %q plugin path %q", cfg.Path, cfg.Dir, cfg.Plugins["p"].Path)
	}

	if err := os.WriteFile(file, []byte("[plugins.p]\npath = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(file, nil)
	var e *Error
	if !errors.As(err, &e) || e.File != file || e.Line != 2 || e.Key != "plugins.p.path" {
		t.Errorf("Load error = %#v", err)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Error{File: "a.toml", Line: 3, Key: "servers.x", Msg: "bad"}, "a.toml:3: servers.x: bad"},
		{&Error{File: "a.toml", Key: "servers.x", Msg: "bad"}, "a.toml: servers.x: bad"},
		{&Error{Line: 3, Key: "servers.x", Msg: "bad"}, "line 3: servers.x: bad"},
		{&Error{File: "a.toml", Line: 3, Msg: "bad"}, "a.toml:3: bad"},
		{&Error{Msg: "bad"}, "bad"},
		{ErrorList{{File: "a", Line: 1, Msg: "x"}, {File: "a", Line: 2, Msg: "y"}}, "a:1: x\na:2: y"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSchemaFieldTypes guards the decoder: every field with a toml tag has a
// type it knows.
func TestSchemaFieldTypes(t *testing.T) {
	for _, v := range []any{&Host{}, &Server{}, &Plugin{}, &ToolOptions{}, &Backoff{}, &Circuit{}, &Serve{}, &Client{}} {
		rv := reflect.ValueOf(v).Elem()
		for tag, i := range tomlFields(rv.Type()) {
			var m map[string]toml.Primitive
			md, err := toml.Decode("x = 1.5", &m)
			if err != nil {
				t.Fatal(err)
			}
			l := &loader{md: md, bad: map[string]bool{}, loc: locate("")}
			// A float fits no field: a type error, not "no decoder".
			l.field(m["x"], []string{tag}, rv.FieldByIndex(i))
			if len(l.errs) != 1 {
				t.Errorf("%T.%s: got %d errors, want 1", v, tag, len(l.errs))
			}
			for _, e := range l.errs {
				if strings.Contains(e.Msg, "internal error") {
					t.Errorf("%T.%s: %s", v, tag, e.Msg)
				}
			}
		}
	}
}
