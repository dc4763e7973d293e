package native

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native/internal/nsinit"
)

// entry is one Path with what the child needs to make it.
type entry struct {
	Path
	kind    string // nsinit.Mount.Kind, or "file" (generated: content)
	content string
	size    int64
}

// runtimeDirs are the top-level directories of the runtime set, bound
// read-only where they are directories and recreated as symbolic links
// where they are links (usrmerge: /bin -> usr/bin).
var runtimeDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// runtimeEtc are the /etc entries a runtime needs (globs, relative to
// /etc): CA certificates, the dynamic linker's cache and configuration,
// the alternatives links, the time zone, name service switch, MIME types
// and the OS release.
var runtimeEtc = []string{"ssl/certs", "ssl/openssl.cnf", "ca-certificates*", "alternatives", "ld.so.cache", "ld.so.conf*",
	"localtime", "nsswitch.conf", "mime.types", "os-release"}

// runtimeSet computes what the server sees: the runtime set, the private
// paths and the allowed paths, sorted for mounting.
func (p *Plan) runtimeSet(allowed []entry) ([]entry, error) {
	var es []entry
	ro := func(guest, host, why string) {
		es = append(es, entry{Path: Path{Guest: guest, Host: host, Mode: sandbox.MountReadOnly, Why: why}, kind: "bind"})
	}
	for _, d := range runtimeDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				es = append(es, entry{Path: Path{Guest: d, Host: t, Why: "runtime (symbolic link)"}, kind: "symlink"})
			}
		case fi.IsDir():
			ro(d, d, "runtime")
		}
	}
	for _, g := range runtimeEtc {
		matches, _ := filepath.Glob(filepath.Join("/etc", g))
		for _, m := range matches {
			if r, err := filepath.EvalSymlinks(m); err == nil {
				ro(m, r, "runtime")
			}
		}
	}
	// covered: host path h is visible already, through the runtime set or
	// an allowed path (a program in the allowed project directory).
	covered := func(h string) bool {
		for _, e := range append(es[:len(es):len(es)], allowed...) {
			if e.kind == "bind" && under(h, e.Host) {
				return true
			}
		}
		return false
	}
	home := p.home
	if home == "/" || (home != "" && covered(home)) {
		home = ""
	}
	// An allowed path that is HOME or above it replaces the private HOME
	// and the caches under it.
	for _, a := range allowed {
		if home != "" && under(home, a.Guest) {
			home = ""
		}
	}
	// The program's install prefix, and its interpreter's.
	for _, prog := range append([]string{p.program}, p.interpreters()...) {
		for _, d := range installDirs(prog, home) {
			if !covered(d) {
				ro(d, d, "runtime (the program's installation)")
			}
		}
	}
	// pyenv's root when the program is under it (its shims run pyenv).
	pyenv := envValue(p.Spec.Env, "PYENV_ROOT")
	if pyenv == "" && home != "" {
		pyenv = filepath.Join(home, ".pyenv")
	}
	if pyenv != "" && (under(p.Spec.Command, pyenv) || under(p.program, pyenv)) {
		if r, err := filepath.EvalSymlinks(pyenv); err == nil && !covered(r) {
			ro(pyenv, r, "runtime (pyenv root)")
		}
	}
	// Language caches, read-only, where they exist.
	var caches [][2]string
	if c := envValue(p.Spec.Env, "npm_config_cache"); c != "" {
		caches = append(caches, [2]string{c, "npm cache"})
	} else if c := envValue(p.Spec.Env, "NPM_CONFIG_CACHE"); c != "" {
		caches = append(caches, [2]string{c, "npm cache"})
	} else if home != "" {
		caches = append(caches, [2]string{filepath.Join(home, ".npm"), "npm cache"})
	}
	if c := envValue(p.Spec.Env, "UV_CACHE_DIR"); c != "" {
		caches = append(caches, [2]string{c, "uv cache"})
	} else if home != "" {
		caches = append(caches, [2]string{filepath.Join(home, ".cache", "uv"), "uv cache"})
	}
	if home != "" {
		caches = append(caches, [2]string{filepath.Join(home, ".local", "share", "uv"), "uv tools and Pythons"})
	}
	for _, c := range caches {
		if !filepath.IsAbs(c[0]) {
			continue
		}
		if r, err := filepath.EvalSymlinks(c[0]); err == nil && !covered(r) {
			// An overlay: the host's files stay read-only, and what the
			// launcher writes (npm rewrites index entries and logs even
			// offline, uv takes locks) goes to a private tmpfs layer
			// discarded when the server exits.
			es = append(es, entry{Path: Path{Guest: filepath.Clean(c[0]), Host: r, Mode: sandbox.MountReadOnly,
				Why: "runtime (" + c[1] + "; host files read-only, writes to a private layer)"}, kind: "overlay", size: p.Memory})
		}
	}
	// HOME: an empty private tmpfs (the caches above are bound under it).
	if home != "" {
		es = append(es, entry{Path: Path{Guest: home, Mode: sandbox.MountReadWrite, Why: "private (empty HOME)"}, kind: "tmpfs", size: p.Memory})
	}
	tmpAllowed := false
	for _, a := range allowed {
		if a.Guest == "/tmp" {
			tmpAllowed = true
		}
	}
	if !tmpAllowed {
		es = append(es, entry{Path: Path{Guest: "/tmp", Mode: sandbox.MountReadWrite, Why: "private"}, kind: "tmpfs", size: p.Memory})
	}
	es = append(es,
		entry{Path: Path{Guest: "/proc", Mode: sandbox.MountReadOnly, Why: "private (the server's PID namespace)"}, kind: "proc"},
		entry{Path: Path{Guest: "/dev", Mode: sandbox.MountReadWrite, Why: "private (null, zero, full, random, urandom, tty, shm)"}, kind: "dev"})
	// Generated /etc files.
	for _, f := range p.etcFiles() {
		es = append(es, entry{Path: Path{Guest: f.Target, Mode: sandbox.MountReadOnly, Why: "private (generated)"}, kind: "file", content: f.Content})
	}
	// An allowed path may not be a path of the runtime set, nor cover one:
	// its mount points would be made in the host directory.
	for _, a := range allowed {
		for _, e := range es {
			if e.Guest == a.Guest {
				return nil, fmt.Errorf("%w: server %q: allowed_paths %q: the runtime set has this path (%s)", ErrSpec, p.Spec.Name, a.Guest, e.Why)
			}
			if under(e.Guest, a.Guest) {
				return nil, fmt.Errorf("%w: server %q: allowed_paths %q would cover %s of the runtime set (%s); choose another guest path", ErrSpec, p.Spec.Name, a.Guest, e.Guest, e.Why)
			}
		}
	}
	es = append(es, allowed...)
	sortEntries(es)
	// Drop runtime duplicates (the first wins).
	out := es[:0]
	for i, e := range es {
		if i > 0 && e.Guest == es[i-1].Guest {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// installDirs returns the directories of prog's installation to make
// visible: its own directory and, when that is a bin or sbin directory,
// the lib, lib64, libexec and share directories beside it that exist (a
// pyenv version's standard library, a node install's lib/node_modules)
// — not the whole prefix, which for a program in a project's bin
// directory would be the project (its .env and .git among it). Never /,
// HOME or a directory above HOME: then only the program itself.
func installDirs(prog, home string) []string {
	bad := func(d string) bool { return d == "/" || (home != "" && under(home, d)) }
	dir := filepath.Dir(prog)
	if bad(dir) {
		return []string{prog}
	}
	out := []string{dir}
	if b := filepath.Base(dir); b == "bin" || b == "sbin" {
		prefix := filepath.Dir(dir)
		if bad(prefix) {
			return out
		}
		for _, sub := range []string{"lib", "lib64", "libexec", "share"} {
			d := filepath.Join(prefix, sub)
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, d)
			}
		}
	}
	return out
}

// interpreters returns the resolved interpreters of a script program
// (#! line): the interpreter itself, or for /usr/bin/env the program it
// runs, looked up in the server's PATH (else toolhost's).
func (p *Plan) interpreters() []string {
	f, err := os.Open(p.program)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") || (err != nil && len(line) < 3) {
		return nil
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return nil
	}
	interp := fields[0]
	var out []string
	if r, err := filepath.EvalSymlinks(interp); err == nil {
		out = append(out, r)
	}
	if filepath.Base(interp) == "env" {
		for _, a := range fields[1:] {
			if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				continue
			}
			if lp := lookPath(a, envValue(p.Spec.Env, "PATH")); lp != "" {
				if r, err := filepath.EvalSymlinks(lp); err == nil {
					out = append(out, r)
				}
			}
			break
		}
	}
	return out
}

func lookPath(name, path string) string {
	if path == "" {
		lp, _ := exec.LookPath(name)
		return lp
	}
	for _, d := range filepath.SplitList(path) {
		c := filepath.Join(d, name)
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// etcFiles are the generated /etc files: passwd and group with the
// server's user (uid and gid mapped to themselves) and HOME, hosts and
// resolv.conf for a namespace with only its own loopback (the relay
// replaces them when the server has allowed hosts).
func (p *Plan) etcFiles() []nsinit.File {
	uid, gid := os.Getuid(), os.Getgid()
	name, group := "root", "root"
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		group = g.Name
	}
	home := p.home
	if home == "" {
		home = "/"
	}
	return []nsinit.File{
		{Target: "/etc/passwd", Content: fmt.Sprintf("%s:x:%d:%d::%s:/bin/sh\n", name, uid, gid, home)},
		{Target: "/etc/group", Content: fmt.Sprintf("%s:x:%d:\n", group, gid)},
		{Target: "/etc/hosts", Content: "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
		{Target: "/etc/resolv.conf", Content: "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"},
	}
}

// launcherEnv returns what the sandbox adds to the environment env of a
// server so that package launchers run from their caches: without network
// (no allowed_hosts) npm_config_offline=true and UV_OFFLINE=1, so that npx
// and uvx use what is cached and fail at once (npm's ENOTCACHED) instead
// of retrying the registry for a minute; with network
// npm_config_prefer_offline=true, so that what is cached is used without
// revalidation. A variable the server's environment sets already (in any
// case, for npm) is left alone.
func (p *Plan) launcherEnv(env []string) []string {
	set := func(k string) bool {
		return envValue(env, k) != "" || envValue(env, strings.ToUpper(k)) != ""
	}
	var out []string
	if len(p.Spec.Hosts) == 0 {
		if !set("npm_config_offline") {
			out = append(out, "npm_config_offline=true")
		}
		if !set("UV_OFFLINE") {
			out = append(out, "UV_OFFLINE=1")
		}
	} else if !set("npm_config_prefer_offline") {
		out = append(out, "npm_config_prefer_offline=true")
	}
	return out
}
