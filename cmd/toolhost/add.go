package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/termsafe"
)

// Bounds of toolhost add.
const (
	// maxAddEntry is the largest [servers.NAME] table add writes, in bytes:
	// a server.json that would make a larger one is refused.
	maxAddEntry = 64 << 10
	// maxAddConfig is the largest configuration file add appends to.
	maxAddConfig = 16 << 20
	// maxAddString is the longest string of a server.json add copies into a
	// value (an argument, a URL, a header); longer ones are refused.
	maxAddString = 2048
	// maxAddItems is the most arguments, variables or headers of one
	// package or remote.
	maxAddItems = 100
	// maxAddComment is the longest comment text add copies from a
	// server.json (descriptions), in bytes; longer text is cut.
	maxAddComment = 200
)

//go:embed catalogue/servers.toml
var catalogueTOML []byte

// catalogueEntry is one [NAME] table of catalogue/servers.toml; the file's
// header says what each key means.
type catalogueEntry struct {
	Summary      string            `toml:"summary"`
	Source       string            `toml:"source"`
	Aliases      []string          `toml:"aliases"`
	Command      string            `toml:"command"`
	Args         []string          `toml:"args"`
	Env          map[string]string `toml:"env"`
	Sandbox      string            `toml:"sandbox"`
	AllowedPaths map[string]string `toml:"allowed_paths"`
	AllowedHosts []string          `toml:"allowed_hosts"`
	Vars         map[string]string `toml:"vars"`
	Notes        []string          `toml:"notes"`
}

// loadCatalogue decodes the embedded catalogue (a broken one is a bug the
// tests catch).
func loadCatalogue() (map[string]*catalogueEntry, error) {
	var cat map[string]*catalogueEntry
	md, err := toml.Decode(string(catalogueTOML), &cat)
	if err != nil {
		return nil, fmt.Errorf("the built-in catalogue: %w", err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return nil, fmt.Errorf("the built-in catalogue: unknown keys %v", u)
	}
	return cat, nil
}

// lookupCatalogue finds name or an alias of an entry.
func lookupCatalogue(cat map[string]*catalogueEntry, name string) (string, *catalogueEntry) {
	if e := cat[name]; e != nil {
		return name, e
	}
	for n, e := range cat {
		if slices.Contains(e.Aliases, name) {
			return n, e
		}
	}
	return "", nil
}

// addition is what add appends: one [servers.NAME] table with the comment
// above it, and what to tell the user.
type addition struct {
	comments []string          // lines above the table, without "# "
	keys     []string          // "key = value" lines of the table, in order
	vars     map[string]string // variable → why to set it
	// tail are commented-out lines written after the keys (a suggested
	// sandbox the operator enables after review).
	tail []string
}

// render returns the entry as TOML: the comments, the header and the keys.
func (a *addition) render(name string) string {
	var b strings.Builder
	for _, c := range a.comments {
		b.WriteString(strings.TrimRight("# "+commentText(c, 0), " ") + "\n")
	}
	for _, v := range slices.Sorted(maps.Keys(a.vars)) {
		b.WriteString("# Set " + v + " before starting: " + commentText(a.vars[v], 0) + "\n")
	}
	fmt.Fprintf(&b, "[servers.%s]\n", name)
	for _, k := range a.keys {
		b.WriteString(k + "\n")
	}
	for _, t := range a.tail {
		b.WriteString("# " + commentText(t, 0) + "\n")
	}
	return b.String()
}

// fromCatalogue builds the addition of a catalogue entry.
func fromCatalogue(name string, e *catalogueEntry) *addition {
	a := &addition{vars: maps.Clone(e.Vars)}
	if a.vars == nil {
		a.vars = map[string]string{}
	}
	a.comments = append(a.comments, "Added by toolhost add "+name+": "+e.Summary, "Source: "+e.Source+"; pinned: change the version to upgrade.")
	if e.Sandbox != "" {
		a.comments = append(a.comments, "Sandbox: "+e.Sandbox+" (README \"Isolating native servers\"): it sees only allowed_paths and reaches only allowed_hosts.")
	}
	a.comments = append(a.comments, e.Notes...)
	a.keys = append(a.keys, "description = "+tomlString(e.Summary))
	a.keys = append(a.keys, "command = "+tomlString(e.Command))
	a.keys = append(a.keys, "args = "+tomlArray(e.Args))
	if len(e.Env) > 0 {
		a.keys = append(a.keys, "env = "+tomlInline(e.Env))
	}
	if e.Sandbox != "" {
		a.keys = append(a.keys, "sandbox = "+tomlString(e.Sandbox))
	}
	if len(e.AllowedPaths) > 0 {
		a.keys = append(a.keys, "allowed_paths = "+tomlInline(e.AllowedPaths))
	}
	if len(e.AllowedHosts) > 0 {
		a.keys = append(a.keys, "allowed_hosts = "+tomlArray(e.AllowedHosts))
	}
	return a
}

// addCmd is toolhost add [NAME] [--as TABLE] [--dry-run] and toolhost add
// --from-registry FILE: it appends a [servers.TABLE] entry to the
// configuration file (--config, $TOOLHOST_CONFIG or ./toolhost.toml; created
// if missing), after checking that the result loads, atomically (a
// temporary file renamed over it, its mode kept). Exit status: 0 added (or
// listed, or printed with --dry-run); 1 a server.json with nothing toolhost
// can run; 2 usage, an unknown NAME, a TABLE already in the file, an
// unreadable or invalid file.
func (c *cli) addCmd(args []string) int {
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	as := fs.String("as", "", "")
	dryRun := fs.Bool("dry-run", false, "")
	registry := fs.String("from-registry", "", "")
	pos, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, addUsage)
		return exitOK
	}
	if err != nil {
		return c.usageError("add: " + err.Error())
	}
	cat, err := loadCatalogue()
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: add: %v\n", err)
		return exitUsage
	}
	var (
		a     *addition
		table string
	)
	switch {
	case *registry != "" && len(pos) > 0:
		return c.usageError("add: give a catalogue NAME or --from-registry FILE, not both")
	case *registry != "":
		data, err := readBoundedAt(*registry, maxImportFile)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: add: %s\n", termsafe.Line(err.Error()))
			return exitUsage
		}
		var s registryServer
		if err := json.Unmarshal(data, &s); err != nil {
			fmt.Fprintf(c.stderr, "toolhost: add: %s: %s\n", termsafe.Line(*registry), termsafe.Line(jsonError(data, err).Error()))
			return exitUsage
		}
		if table, err = registryTableName(s.Name); err != nil && *as == "" {
			fmt.Fprintf(c.stderr, "toolhost: add: %s: %s; choose one with --as NAME\n", termsafe.Line(*registry), termsafe.Line(err.Error()))
			return exitUsage
		}
		if a, err = fromRegistry(&s); err != nil {
			fmt.Fprintf(c.stderr, "toolhost: add: %s: nothing added: %s\n", termsafe.Line(*registry), termsafe.Line(err.Error()))
			return exitToolError
		}
	case len(pos) == 0:
		c.listCatalogue(cat)
		return exitOK
	case len(pos) > 1:
		return c.usageError("add takes one NAME (toolhost add lists them)")
	default:
		name, e := lookupCatalogue(cat, pos[0])
		if e == nil {
			return c.usageError(fmt.Sprintf("add: %q is not in the catalogue: %s (toolhost add lists them; --from-registry FILE takes an MCP Registry server.json)", termsafe.Line(truncate(pos[0], 80)), strings.Join(slices.Sorted(maps.Keys(cat)), ", ")))
		}
		a, table = fromCatalogue(name, e), name
	}
	if *as != "" {
		if !importNameRE.MatchString(*as) || strings.Contains(*as, "__") {
			return c.usageError(fmt.Sprintf("add: --as %q is not a backend name: use 1 to 64 of A-Z a-z 0-9 _ -, without __", termsafe.Line(truncate(*as, 80))))
		}
		table = *as
	}
	entry := a.render(table)
	if len(entry) > maxAddEntry {
		fmt.Fprintf(c.stderr, "toolhost: add: the entry would be %d bytes, more than the %d add writes: nothing added\n", len(entry), maxAddEntry)
		return exitToolError
	}
	code := c.appendEntry(table, entry, *dryRun)
	if code != exitOK {
		return code
	}
	if len(a.vars) > 0 {
		fmt.Fprintf(c.stderr, "Set these before starting:\n")
		for _, v := range slices.Sorted(maps.Keys(a.vars)) {
			fmt.Fprintf(c.stderr, "  %s: %s\n", v, termsafe.Line(a.vars[v]))
		}
	}
	return exitOK
}

const addUsage = `Usage: toolhost add [NAME] [--as TABLE] [--dry-run]
       toolhost add --from-registry SERVER.JSON [--as TABLE] [--dry-run]

Appends a commented [servers.TABLE] entry to the configuration file (--config, $TOOLHOST_CONFIG or
./toolhost.toml; created if missing): from the built-in catalogue (NAME; without it, the catalogue is
listed), or translated from an MCP Registry server.json (npm, pypi and oci packages over stdio, or a
streamable-http remote). Entries are pinned to a version, reference their secrets as ${VAR} (listed
on stderr: set them before starting) and carry a suggested sandbox. TABLE defaults to NAME, or to
the last part of the server.json's name. The file must load before and after; it is replaced
atomically, keeping its mode.
  --as TABLE     the [servers.TABLE] name to use
  --dry-run      print the entry on stdout and change nothing
Exit status: 0 added, listed or printed; 1 nothing in SERVER.JSON toolhost can run (the reasons are
on stderr); 2 usage, unknown NAME, TABLE already in the file, unreadable or invalid file.
`

// listCatalogue prints the catalogue: name, summary, source.
func (c *cli) listCatalogue(cat map[string]*catalogueEntry) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSERVER\tSOURCE")
	for _, n := range slices.Sorted(maps.Keys(cat)) {
		e := cat[n]
		label := n
		if len(e.Aliases) > 0 {
			label += " (" + strings.Join(e.Aliases, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", label, e.Summary, e.Source)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "\ntoolhost add NAME appends one to the configuration; toolhost add NAME --dry-run shows it.\n")
}

// configTarget is the configuration file add writes: --config,
// $TOOLHOST_CONFIG or ./toolhost.toml.
func (c *cli) configTarget() string {
	switch {
	case c.configPath != "":
		return c.configPath
	case os.Getenv("TOOLHOST_CONFIG") != "":
		return os.Getenv("TOOLHOST_CONFIG")
	}
	return defaultConfig
}

// addLookupEnv resolves ${VAR} while add checks that a file loads: the
// variable's value when it is set, else a placeholder (the entry's
// variables are usually not set yet).
func addLookupEnv(v string) (string, bool) {
	if s, ok := os.LookupEnv(v); ok && s != "" {
		return s, true
	}
	return "x", true
}

// appendEntry appends entry, the [servers.table] table, to the
// configuration file (or prints it, with dryRun).
func (c *cli) appendEntry(table, entry string, dryRun bool) int {
	path := c.configTarget()
	// Write through a symbolic link to the file it names, not over the
	// link.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	old, mode, err := readConfigForAdd(path)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: add: %s\n", termsafe.Line(err.Error()))
		return exitUsage
	}
	dir := filepath.Dir(path)
	if absDir, err := filepath.Abs(dir); err == nil {
		dir = absDir
	}
	opts := &config.Options{Name: path, Dir: dir, LookupEnv: addLookupEnv}
	if len(old) > 0 {
		cfg, err := config.Parse(old, opts)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolhost: add: %s does not load now; fix it first:\n%v\n", path, err)
			return exitUsage
		}
		line, taken := 0, false
		if s := cfg.Servers[table]; s != nil {
			line, taken = s.Line, true
		} else if p := cfg.Plugins[table]; p != nil {
			line, taken = p.Line, true
		}
		if taken {
			fmt.Fprintf(c.stderr, "toolhost: add: %s:%d: a backend named %q is already there: choose another name with --as NAME\n", path, line, table)
			return exitUsage
		}
	}
	var buf bytes.Buffer
	buf.Write(old)
	if len(old) > 0 {
		if old[len(old)-1] != '\n' {
			buf.WriteByte('\n')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString(entry)
	cfg, err := config.Parse(buf.Bytes(), opts)
	if err == nil && cfg.Servers[table] == nil {
		err = fmt.Errorf("[servers.%s] is not in the result", table)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: add: the entry does not load, nothing added (a bug in toolhost add, or input it should have refused):\n%v\n", err)
		return exitUsage
	}
	if dryRun {
		fmt.Fprint(c.stdout, entry)
		return exitOK
	}
	if err := replaceFile(path, old, buf.Bytes(), mode); err != nil {
		fmt.Fprintf(c.stderr, "toolhost: add: %s\n", termsafe.Line(err.Error()))
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "added [servers.%s] to %s\n", table, path)
	return exitOK
}

// readConfigForAdd reads the configuration file add appends to: its bytes
// and mode; nothing and 0644 when it does not exist.
func readConfigForAdd(path string) ([]byte, fs.FileMode, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := readBoundedAt(path, maxAddConfig)
	return data, st.Mode().Perm(), err
}

// replaceFile writes data to path atomically: a temporary file in the same
// directory, with mode, synced, renamed over path. It refuses when path
// no longer holds old (another program changed it meanwhile).
func replaceFile(path string, old, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".add-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	now, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !bytes.Equal(now, old) {
		return fmt.Errorf("%s changed while toolhost add ran: nothing added; run it again", path)
	}
	return os.Rename(tmp, path)
}

// readBoundedAt reads at most limit bytes of path.
func readBoundedAt(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(b.Len()) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most toolhost add reads", path, limit>>20)
	}
	return b.Bytes(), nil
}

// tomlArray writes a TOML array of basic strings.
func tomlArray(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tomlInline writes a TOML inline table of strings, keys quoted, sorted.
func tomlInline(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, tomlString(k)+" = "+tomlString(m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// commentText makes s safe for one comment line: every control and
// invisible format character escaped (termsafe), line and paragraph
// separators too, cut to n bytes when n > 0.
func commentText(s string, n int) string {
	s = strings.NewReplacer("\u2028", `\u2028`, "\u2029", `\u2029`).Replace(termsafe.Line(s))
	if n > 0 {
		s = truncate(s, n)
	}
	return s
}

// plainText makes s fit a description key: control, format and separator
// characters become spaces, runs of spaces one, cut to n bytes.
func plainText(s string, n int) string {
	s = truncate(s, 4*n) // (bounded work on a huge input)
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return truncate(strings.TrimSpace(b.String()), n)
}

var tableNameInvalid = lazyre.New(`[^a-z0-9_-]+`)

// registryTableName makes a backend name from a server.json name
// ("io.github.owner/server-name"): its last "/"-part, lower-cased, every
// run of other characters than a-z 0-9 _ - one "_", "__" made "_", cut to
// 64 bytes.
func registryTableName(name string) (string, error) {
	last := name[strings.LastIndexByte(name, '/')+1:]
	n := tableNameInvalid.ReplaceAllString(strings.ToLower(last), "_")
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	n = strings.Trim(n, "_-")
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "_-")
	}
	if n == "" {
		return "", fmt.Errorf("its name %q gives no backend name", truncate(name, 80))
	}
	return n, nil
}
