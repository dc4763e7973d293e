package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/termsafe"
)

// Bounds of toolhost import.
const (
	// maxImportFile is the largest client configuration import reads.
	maxImportFile = 4 << 20
	// maxImportServers is the most server entries one file may hold.
	maxImportServers = 1000
)

// Client configuration formats import recognises, by shape.
const (
	formatMCPServers = "Claude Desktop / Cursor / Claude Code .mcp.json (mcpServers)"
	formatClaudeCode = "Claude Code ~/.claude.json (mcpServers and projects.PATH.mcpServers)"
	formatVSCode     = "VS Code .vscode/mcp.json (servers and inputs)"
	formatVSSettings = "VS Code settings.json (mcp.servers and mcp.inputs)"
)

var (
	importNameRE = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)
	envNameRE    = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	upperEnvRE   = lazyre.New(`^[A-Z_][A-Z0-9_]*$`)
	headerNameRE = lazyre.New("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	// refRE matches the references the mcpServers formats already share
	// with toolhost: ${VAR} and ${VAR:-default} (Claude Code expands them).
	refRE = lazyre.New(`^\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^${}]*)?\}`)
	// vscodeRE matches a VS Code variable: ${input:ID}, ${env:VAR},
	// ${workspaceFolder}, ...
	vscodeRE = lazyre.New(`^\$\{([A-Za-z]+)(?::([^${}]*))?\}`)
)

// importEntry is one server entry as read: its name in the file, where it
// came from (for ~/.claude.json) and its keys.
type importEntry struct {
	name, from string
	raw        json.RawMessage
}

// vscodeInput is one element of a VS Code file's "inputs".
type vscodeInput struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Password    bool   `json:"password"`
	Description string `json:"description"`
}

// importer translates one file.
type importer struct {
	file   string // as given, for messages
	vscode bool
	inputs map[string]vscodeInput
	vars   map[string]string // variable → why to set it (first reason)
	values map[string]string // variable → the literal it replaced
	notes  []string          // further lines for stderr
	taken  map[string]string // backend name → original name
	// existing, with --prefix-check, are the configuration's backend names
	// and effective tool prefixes.
	existing map[string]string
}

// importCmd is toolhost import FILE [--prefix-check]: it writes
// [servers.NAME] tables translated from a client's MCP configuration to
// stdout and what to set to stderr. Exit status: 0 at least one entry
// written, 1 none, 2 usage or an unreadable, invalid or too large file.
func (c *cli) importCmd(args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	prefixCheck := fs.Bool("prefix-check", false, "")
	pos, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, importUsage)
		return exitOK
	}
	if err != nil {
		return c.usageError("import: " + err.Error())
	}
	if len(pos) != 1 {
		return c.usageError("import takes one FILE (a client's MCP configuration JSON)")
	}
	im := &importer{file: pos[0], vars: map[string]string{}, values: map[string]string{}, taken: map[string]string{}}
	if *prefixCheck {
		cfg, code := c.loadConfigForImport()
		if cfg == nil {
			return code
		}
		im.existing = map[string]string{}
		for _, n := range cfg.Backends() {
			im.existing[n] = n
			if p := config.ToolPrefix(n, cfg.BackendPrefix(n)); p != "" {
				im.existing["prefix:"+p] = n
			}
		}
	}
	data, err := readBounded(im.file)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: import: %s\n", termsafe.Line(err.Error()))
		return exitUsage
	}
	format, entries, err := im.entries(data)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: import: %s: %s\n", termsafe.Line(im.file), termsafe.Line(err.Error()))
		return exitUsage
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# Imported by toolhost import from %s\n# Format: %s\n", termsafe.Line(im.file), format)
	fmt.Fprintf(&out, "# Set the environment variables toolhost import listed on stderr before loading this file.\n")
	written, refused := 0, 0
	for _, e := range entries {
		// A refused entry's variables and notes are not listed.
		vars, values, notes := maps.Clone(im.vars), maps.Clone(im.values), len(im.notes)
		table, err := im.translate(e)
		if err != nil {
			im.vars, im.values, im.notes = vars, values, im.notes[:notes]
			refused++
			fmt.Fprintf(c.stderr, "toolhost: import: refused %s: %s\n", termsafe.Line(strconvQuote(e.label())), termsafe.Line(err.Error()))
			continue
		}
		written++
		out.WriteString("\n")
		out.WriteString(table)
	}
	if written > 0 {
		fmt.Fprint(c.stdout, out.String())
	}
	if len(im.vars) > 0 {
		fmt.Fprintf(c.stderr, "Environment variables to set:\n")
		for _, v := range slices.Sorted(maps.Keys(im.vars)) {
			fmt.Fprintf(c.stderr, "  set %s (%s)\n", v, termsafe.Line(im.vars[v]))
		}
	}
	for _, n := range im.notes {
		fmt.Fprintf(c.stderr, "note: %s\n", termsafe.Line(n))
	}
	fmt.Fprintf(c.stderr, "toolhost: import: %d server(s) written, %d refused\n", written, refused)
	if written == 0 {
		return exitToolError
	}
	return exitOK
}

const importUsage = `Usage: toolhost import FILE [--prefix-check] > servers.toml

Translates a client's MCP server configuration (Claude Desktop, Cursor, Claude Code .mcp.json or
~/.claude.json, VS Code .vscode/mcp.json or settings.json) into [servers.NAME] tables on stdout.
Literal env values and credential headers become ${VAR} references; the variables to set are
listed on stderr, with every entry that could not be translated and why.
  --prefix-check  also refuse entries whose name or tool prefix a backend of the configuration
                  (--config, $TOOLHOST_CONFIG or ./toolhost.toml) already has
Exit status: 0 at least one entry written, 1 none, 2 usage or unreadable/invalid FILE.
`

// loadConfigForImport loads the configuration for --prefix-check with every
// ${VAR} taken as set: only names and prefixes are compared.
func (c *cli) loadConfigForImport() (*config.Config, int) {
	path := c.configPath
	if path == "" {
		path = os.Getenv("TOOLHOST_CONFIG")
	}
	if path == "" {
		path = defaultConfig
	}
	cfg, err := config.Load(path, &config.Options{LookupEnv: func(string) (string, bool) { return "x", true }})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: import --prefix-check: invalid configuration:\n%v\n", err)
		return nil, exitUsage
	}
	return cfg, exitOK
}

// readBounded reads at most maxImportFile bytes of path.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImportFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxImportFile {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most import reads", path, maxImportFile>>20)
	}
	return data, nil
}

// jsonError describes a decoding error of data with its line and column.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	off = min(off, int64(len(data)))
	line := 1 + strings.Count(string(data[:off]), "\n")
	col := off - int64(strings.LastIndexByte(string(data[:off]), '\n'))
	return fmt.Errorf("invalid JSON at line %d, column %d (byte offset %d): %v", line, col, off, err)
}

// entries detects the format of data and returns its server entries, in
// name order (for ~/.claude.json: the top-level ones, then each project's in
// path order).
func (im *importer) entries(data []byte) (string, []importEntry, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return "", nil, jsonError(data, err)
	}
	if top == nil {
		return "", nil, errors.New("the JSON is null, not an object with mcpServers or servers")
	}
	object := func(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object", what)
		}
		return m, nil
	}
	var (
		format  string
		entries []importEntry
	)
	add := func(raw json.RawMessage, what, from string) error {
		m, err := object(raw, what)
		if err != nil {
			return err
		}
		for _, n := range slices.Sorted(maps.Keys(m)) {
			entries = append(entries, importEntry{name: n, from: from, raw: m[n]})
		}
		return nil
	}
	vscode := func(servers, inputs json.RawMessage, prefix string) error {
		im.vscode = true
		if inputs != nil && string(inputs) != "null" {
			var in []vscodeInput
			if err := json.Unmarshal(inputs, &in); err != nil {
				return fmt.Errorf("%sinputs is not an array of {id, type, description, password} objects", prefix)
			}
			im.inputs = map[string]vscodeInput{}
			for _, i := range in {
				im.inputs[i.ID] = i
			}
		}
		return add(servers, prefix+"servers", "")
	}
	var err error
	switch {
	case top["servers"] != nil:
		format = formatVSCode
		err = vscode(top["servers"], top["inputs"], "")
	case top["projects"] != nil:
		format = formatClaudeCode
		if top["mcpServers"] != nil {
			err = add(top["mcpServers"], "mcpServers", "")
		}
		if err == nil {
			var projects map[string]json.RawMessage
			if projects, err = object(top["projects"], "projects"); err == nil {
				for _, p := range slices.Sorted(maps.Keys(projects)) {
					var proj struct {
						MCPServers json.RawMessage `json:"mcpServers"`
					}
					if json.Unmarshal(projects[p], &proj) != nil {
						err = fmt.Errorf("projects[%q] is not a JSON object", p)
						break
					}
					if proj.MCPServers != nil && string(proj.MCPServers) != "null" {
						if err = add(proj.MCPServers, fmt.Sprintf("projects[%q].mcpServers", p), p); err != nil {
							break
						}
					}
				}
			}
		}
	case top["mcpServers"] != nil:
		format = formatMCPServers
		err = add(top["mcpServers"], "mcpServers", "")
	case top["mcp"] != nil:
		var mcp struct {
			Servers json.RawMessage `json:"servers"`
			Inputs  json.RawMessage `json:"inputs"`
		}
		if json.Unmarshal(top["mcp"], &mcp) != nil || mcp.Servers == nil {
			return "", nil, errors.New("mcp is not an object with servers (VS Code settings.json)")
		}
		format = formatVSSettings
		err = vscode(mcp.Servers, mcp.Inputs, "mcp.")
	default:
		return "", nil, errors.New("not a known client configuration: no mcpServers (Claude Desktop, Cursor, Claude Code), projects (~/.claude.json) or servers (VS Code) key")
	}
	if err != nil {
		return "", nil, err
	}
	if len(entries) > maxImportServers {
		return "", nil, fmt.Errorf("%d server entries, more than the %d import takes", len(entries), maxImportServers)
	}
	return format, entries, nil
}

// label names an entry in messages (cut to 200 bytes).
func (e importEntry) label() string {
	if e.from != "" {
		return truncate(e.name, 200) + " (project " + truncate(e.from, 200) + ")"
	}
	return truncate(e.name, 200)
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// translate returns the TOML table of one entry, or why it cannot be
// translated.
func (im *importer) translate(e importEntry) (string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(e.raw, &keys); err != nil || keys == nil {
		return "", errors.New("the entry is not a JSON object")
	}
	str := func(k string) (string, bool, error) {
		raw, ok := keys[k]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, fmt.Errorf("%s is not a string", k)
		}
		return s, true, nil
	}
	strMap := func(k string) (map[string]string, error) {
		raw, ok := keys[k]
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s is not an object", k)
		}
		out := map[string]string{}
		for n, v := range m {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%s %q is not a string", k, n)
			}
			out[n] = s
		}
		return out, nil
	}
	typ, _, err := str("type")
	if err != nil {
		return "", err
	}
	command, hasCommand, err := str("command")
	if err != nil {
		return "", err
	}
	u, hasURL, err := str("url")
	if err != nil {
		return "", err
	}
	if _, ok := keys["envFile"]; ok {
		return "", errors.New("envFile is not supported: toolhost reads no env files; move its variables into env and set them in toolhost's environment")
	}
	switch typ {
	case "", "stdio", "http", "streamable-http", "streamableHttp":
	case "sse":
		return "", errors.New(`type "sse" (the deprecated HTTP+SSE transport) is not supported: toolhost speaks Streamable HTTP; if the server also serves Streamable HTTP, import its URL with type "http"`)
	default:
		return "", fmt.Errorf("unknown type %q: toolhost takes stdio (command) or http (url)", typ)
	}
	switch {
	case hasCommand && hasURL:
		return "", errors.New("has both command and url")
	case !hasCommand && !hasURL || hasCommand && command == "" || hasURL && u == "":
		return "", errors.New("has neither command nor url")
	case typ == "stdio" && !hasCommand:
		return "", errors.New(`type "stdio" without command`)
	case typ != "" && typ != "stdio" && !hasURL:
		return "", fmt.Errorf("type %q without url", typ)
	}

	name, note, err := im.backendName(e)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[servers.%s]\n", name)
	if note != "" {
		fmt.Fprintf(&b, "# %s\n", note)
	}
	if e.from != "" {
		fmt.Fprintf(&b, "# from project %s\n", termsafe.Line(truncate(e.from, 200)))
	}
	where := truncate(e.name, 200)
	if hasCommand {
		cmd, err := im.value(command, "command", where)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "command = %s\n", tomlString(cmd))
		if raw, ok := keys["args"]; ok && string(raw) != "null" {
			var list []json.RawMessage
			if err := json.Unmarshal(raw, &list); err != nil {
				return "", errors.New("args is not an array")
			}
			var args []string
			for i, r := range list {
				var s string
				if err := json.Unmarshal(r, &s); err != nil {
					return "", fmt.Errorf("args element %d is not a string (%s)", i+1, truncate(string(r), 40))
				}
				a, err := im.value(s, fmt.Sprintf("args element %d", i+1), where)
				if err != nil {
					return "", err
				}
				args = append(args, a)
			}
			if len(args) > 0 {
				b.WriteString("args = [")
				for i, a := range args {
					if i > 0 {
						b.WriteString(", ")
					}
					b.WriteString(tomlString(a))
				}
				b.WriteString("]\n")
			}
		}
		env, err := strMap("env")
		if err != nil {
			return "", err
		}
		if len(env) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(env)) {
				if !envNameRE.MatchString(k) {
					return "", fmt.Errorf("env %q is not a valid environment variable name", k)
				}
				v, err := im.secret(k, k, env[k], "env "+k, where, false)
				if err != nil {
					return "", err
				}
				parts = append(parts, tomlString(k)+" = "+tomlString(v))
			}
			fmt.Fprintf(&b, "env = { %s }\n", strings.Join(parts, ", "))
		}
		if cwd, ok, err := str("cwd"); err != nil {
			return "", err
		} else if ok && cwd != "" {
			v, err := im.value(cwd, "cwd", where)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "cwd = %s\n", tomlString(v))
		}
	} else {
		v, err := im.value(u, "url", where)
		if err != nil {
			return "", err
		}
		if !strings.Contains(v, "${") {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Hostname() == "" {
				return "", errors.New("url is not an http or https URL with a host")
			}
		}
		fmt.Fprintf(&b, "url = %s\n", tomlString(v))
		headers, err := strMap("headers")
		if err != nil {
			return "", err
		}
		if len(headers) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(headers)) {
				if !headerNameRE.MatchString(k) {
					return "", fmt.Errorf("header %q is not a valid HTTP header name", k)
				}
				if strings.ContainsFunc(headers[k], func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
					return "", fmt.Errorf("header %q has line breaks or other control characters", k)
				}
				var v string
				if credentialHeader(k) {
					v, err = im.secret(name+"_"+k, k, headers[k], "header "+k, where, true)
				} else {
					v, err = im.value(headers[k], "header "+k, where)
				}
				if err != nil {
					return "", err
				}
				parts = append(parts, tomlString(k)+" = "+tomlString(v))
			}
			fmt.Fprintf(&b, "headers = { %s }\n", strings.Join(parts, ", "))
		}
	}
	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		switch k {
		case "type", "command", "args", "env", "cwd", "url", "headers":
		default:
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		fmt.Fprintf(&b, "# not imported: %s\n", termsafe.Line(truncate(strings.Join(ignored, ", "), 200)))
	}
	im.taken[name] = e.name
	return b.String(), nil
}

// backendName returns the backend name for entry e (the original if it is
// valid, else a valid one made from it, with a comment saying the
// original), or why it cannot be used.
func (im *importer) backendName(e importEntry) (name, note string, err error) {
	name = e.name
	if !importNameRE.MatchString(name) || strings.Contains(name, "__") {
		var b strings.Builder
		for _, r := range strings.ToLower(name) {
			if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		name = b.String()
		for strings.Contains(name, "__") {
			name = strings.ReplaceAll(name, "__", "_")
		}
		if len(name) > 64 {
			name = name[:64]
		}
		if strings.Trim(name, "_") == "" {
			return "", "", errors.New("its name has no letter or digit to make a backend name from")
		}
		note = "was " + termsafe.Line(strconvQuote(truncate(e.name, 200))) + " in the imported file"
	}
	if prev, dup := im.taken[name]; dup {
		return "", "", fmt.Errorf("backend name %q is already taken by the entry %q imported before it: rename one in the file", name, truncate(prev, 200))
	}
	if n, dup := im.existing[name]; dup {
		return "", "", fmt.Errorf("backend name %q is already used in the configuration (--prefix-check)", n)
	}
	if n, dup := im.existing["prefix:"+name+"__"]; dup {
		return "", "", fmt.Errorf("tool prefix %q is already the prefix of backend %q in the configuration (--prefix-check)", name+"__", n)
	}
	return name, note, nil
}

// credentialHeader reports whether an HTTP header's value is taken for a
// credential: Authorization, Proxy-Authorization, Cookie, or a name holding
// token, key, secret or auth.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"authorization", "cookie", "token", "key", "secret", "auth", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// upperSnake turns a key or input id into an environment variable name:
// camelCase split, letters upper-cased, every other character "_", runs of
// "_" made one, "_" put before a leading digit.
func upperSnake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToUpper(r))
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	out := b.String()
	for strings.Contains(out, "__") {
		out = strings.ReplaceAll(out, "__", "_")
	}
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return out
}

// need records that variable v must be set, and why.
func (im *importer) need(v, why string) {
	if _, ok := im.vars[v]; !ok {
		im.vars[v] = why
	}
}

// secret translates a value that must not stay literal (an env value, a
// credential header): a value with no reference becomes ${KEY} (for an
// Authorization header the scheme word, such as "Bearer ", is kept); a
// value with references is translated as value does. The variable is
// named after varKey in upper snake case: the env key, or for a header
// the backend name and the header (LINEAR_AUTHORIZATION), as many servers
// share header names such as Authorization.
func (im *importer) secret(varKey, key, v, what, where string, header bool) (string, error) {
	tv, err := im.value(v, what, where)
	if err != nil || v == "" {
		return tv, err // (an empty value is no secret)
	}
	if tv != strings.ReplaceAll(v, "$", "$$") {
		return tv, nil // it holds references
	}
	name := varKey
	if !upperEnvRE.MatchString(name) {
		name = upperSnake(varKey)
	}
	scheme := ""
	if header && strings.EqualFold(key, "authorization") {
		if s, rest, ok := strings.Cut(v, " "); ok && rest != "" && !strings.ContainsAny(s, "\t") {
			scheme, v = s+" ", rest
		}
	}
	if old, ok := im.values[name]; ok && old != v {
		im.notes = append(im.notes, fmt.Sprintf("%s was a literal with different values in several entries (the last: %s %q): they all read ${%s} now; rename the variable in one of them if they differ", name, what, where, name))
	}
	im.values[name] = v
	im.need(name, fmt.Sprintf("was a literal in %s: %s of %q", im.file, what, where))
	return scheme + "${" + name + "}", nil
}

// value translates a string of the file into toolhost's syntax: "$" that
// is not a reference becomes "$$"; ${VAR} and ${VAR:-default} are kept
// (VS Code: ${input:ID} becomes ${ID_UPPER_SNAKE}, ${env:VAR} ${VAR},
// ${userHome} ${HOME}, ${workspaceFolder} ${WORKSPACE_FOLDER}), each
// variable listed to set. A string with a NUL is refused.
func (im *importer) value(s, what, where string) (string, error) {
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("%s contains a NUL character", what)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		rest := s[i:]
		if im.vscode {
			if m := vscodeRE.FindStringSubmatch(rest); m != nil {
				v, err := im.vscodeVar(m[1], m[2], strings.Contains(m[0], ":"), what, where)
				if err != nil {
					return "", err
				}
				b.WriteString("${" + v + "}")
				i += len(m[0])
				continue
			}
		} else if m := refRE.FindStringSubmatch(rest); m != nil {
			im.need(m[1], fmt.Sprintf("referenced in %s: %s of %q", im.file, what, where))
			b.WriteString(m[0])
			i += len(m[0])
			continue
		}
		b.WriteString("$$")
		i++
	}
	return b.String(), nil
}

// vscodeVar maps a VS Code variable to an environment variable.
func (im *importer) vscodeVar(kind, arg string, hasArg bool, what, where string) (string, error) {
	switch {
	case kind == "input" && hasArg && arg != "":
		v := upperSnake(arg)
		why := fmt.Sprintf("VS Code input %q, used in %s of %q", arg, what, where)
		if in, ok := im.inputs[arg]; ok {
			if in.Description != "" {
				why += ": " + truncate(in.Description, 200)
			}
			if in.Password {
				why += " (a password)"
			}
		} else {
			why += ", not declared in inputs"
		}
		im.need(v, why)
		return v, nil
	case kind == "env" && hasArg && envNameRE.MatchString(arg):
		im.need(arg, fmt.Sprintf("referenced in %s: %s of %q", im.file, what, where))
		return arg, nil
	case kind == "userHome" && !hasArg:
		return "HOME", nil
	case kind == "workspaceFolder" && !hasArg:
		im.need("WORKSPACE_FOLDER", fmt.Sprintf("VS Code's ${workspaceFolder}, used in %s of %q: the project's directory", what, where))
		return "WORKSPACE_FOLDER", nil
	}
	ref := "${" + kind
	if hasArg {
		ref += ":" + arg
	}
	return "", fmt.Errorf("%s uses the VS Code variable %s}, which has no equivalent in toolhost", what, truncate(ref, 80))
}

// tomlString quotes s as a TOML basic string (TOML 1.0, "String"): \" and
// \\ escaped, and every control character (which TOML does not allow raw)
// and every other character termsafe escapes (C1 controls, bidirectional
// and invisible format characters), and the line and paragraph separators
// U+2028 and U+2029, as \uXXXX, so that the output is safe
// to show on a terminal and decodes to s exactly.
func tomlString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r >= 0x80 && r != utf8.RuneError && termsafe.Line(string(r)) != string(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// truncate cuts s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
