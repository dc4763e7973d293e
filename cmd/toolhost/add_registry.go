package main

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// registryServer is the part of an MCP Registry server.json toolhost add
// reads (modelcontextprotocol/registry, docs/reference/server-json,
// schema 2025-09-29 and later: camelCase keys). Other keys are ignored.
type registryServer struct {
	Name        string              `json:"name"`
	Title       string              `json:"title"`
	Description string              `json:"description"`
	Version     string              `json:"version"`
	Packages    []registryPackage   `json:"packages"`
	Remotes     []registryTransport `json:"remotes"`
}

// registryPackage is one element of packages[].
type registryPackage struct {
	RegistryType         string            `json:"registryType"`
	RegistryBaseURL      string            `json:"registryBaseUrl"`
	Identifier           string            `json:"identifier"`
	Version              string            `json:"version"`
	RuntimeHint          string            `json:"runtimeHint"`
	Transport            registryTransport `json:"transport"`
	RuntimeArguments     []registryInput   `json:"runtimeArguments"`
	PackageArguments     []registryInput   `json:"packageArguments"`
	EnvironmentVariables []registryInput   `json:"environmentVariables"`
}

// registryTransport is a package's transport or one element of remotes[].
type registryTransport struct {
	Type    string          `json:"type"`
	URL     string          `json:"url"`
	Headers []registryInput `json:"headers"`
}

// registryInput is an argument (type "positional" or "named"), an
// environment variable or a header (name, value), or one of their
// {placeholder} variables.
type registryInput struct {
	Type        string                   `json:"type"`
	Name        string                   `json:"name"`
	Description string                   `json:"description"`
	Value       string                   `json:"value"`
	ValueHint   string                   `json:"valueHint"`
	Default     string                   `json:"default"`
	IsRequired  bool                     `json:"isRequired"`
	IsSecret    bool                     `json:"isSecret"`
	Variables   map[string]registryInput `json:"variables"`
}

var (
	npmPackageRE     = lazyre.New(`^(@[a-z0-9~][a-z0-9._~-]*/)?[a-z0-9~][a-z0-9._~-]*$`)
	pypiPackageRE    = lazyre.New(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	ociImageRE       = lazyre.New(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[a-f0-9]{64})?$`)
	versionRE        = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$`)
	placeholderRE    = lazyre.New(`^\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	placeholderAnyRE = lazyre.New(`\{[A-Za-z_][A-Za-z0-9_]*\}`)
	// dockerUnsafe are docker run options that widen a container's
	// rights; a server.json's runtimeArguments may not hold them.
	dockerUnsafe = []string{"--privileged", "--cap-add", "--device", "--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--security-opt", "--network", "--net"}
)

// regTranslator translates one server.json, collecting the variables to
// set and the comments to write.
type regTranslator struct {
	vars     map[string]string
	comments []string
}

func (t *regTranslator) need(v, why string) {
	if _, ok := t.vars[v]; !ok {
		t.vars[v] = why
	}
}

// fromRegistry translates a server.json: its first package toolhost can
// start (npm, pypi or oci, over stdio), else its first streamable-http
// remote. The error lists why each package and remote was refused.
func fromRegistry(s *registryServer) (*addition, error) {
	if len(s.Packages) > maxAddItems || len(s.Remotes) > maxAddItems {
		return nil, fmt.Errorf("more than %d packages or remotes", maxAddItems)
	}
	var reasons []string
	head := []string{fmt.Sprintf("Added by toolhost add --from-registry: %s %s (MCP Registry server.json)", commentText(s.Name, maxAddComment), commentText(s.Version, 64))}
	if d := commentText(s.Description, maxAddComment); d != "" {
		head = append(head, d)
	}
	for i, p := range s.Packages {
		t := &regTranslator{vars: map[string]string{}}
		a, err := t.pkg(&p)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("package %d (%s %s): %v", i+1, truncate(p.RegistryType, 40), truncate(p.Identifier, 100), err))
			continue
		}
		a.comments = slices.Concat(head, skipped(reasons), a.comments)
		a.keys = append([]string{"description = " + tomlString(strings.ReplaceAll(describe(s), "$", "$$"))}, a.keys...)
		return a, nil
	}
	for i, r := range s.Remotes {
		t := &regTranslator{vars: map[string]string{}}
		a, err := t.remote(&r)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("remote %d (%s): %v", i+1, truncate(r.Type, 40), err))
			continue
		}
		a.comments = slices.Concat(head, skipped(reasons), a.comments)
		a.keys = append([]string{"description = " + tomlString(strings.ReplaceAll(describe(s), "$", "$$"))}, a.keys...)
		return a, nil
	}
	if len(reasons) == 0 {
		return nil, errors.New("it has no packages and no remotes")
	}
	return nil, errors.New(strings.Join(reasons, "; "))
}

// describe is the entry's description key: the title, else the
// description, as one plain line.
func describe(s *registryServer) string {
	d := plainText(s.Title, maxAddComment)
	if d == "" {
		d = plainText(s.Description, maxAddComment)
	}
	if d == "" {
		d = plainText(s.Name, maxAddComment)
	}
	return d
}

func skipped(reasons []string) []string {
	var out []string
	for _, r := range reasons {
		out = append(out, "Not used: "+r)
	}
	return out
}

// pkg translates one package.
func (t *regTranslator) pkg(p *registryPackage) (*addition, error) {
	switch p.Transport.Type {
	case "", "stdio":
	case "streamable-http", "sse":
		return nil, fmt.Errorf("the package serves %s, and toolhost starts only stdio servers (it connects to HTTP servers that already run: use a remote)", p.Transport.Type)
	default:
		return nil, fmt.Errorf("unknown transport %q", truncate(p.Transport.Type, 40))
	}
	if len(p.RuntimeArguments) > maxAddItems || len(p.PackageArguments) > maxAddItems || len(p.EnvironmentVariables) > maxAddItems {
		return nil, fmt.Errorf("more than %d arguments or environment variables", maxAddItems)
	}
	version := p.Version
	pinned := func() error {
		if version == "" || version == "latest" || !versionRE.MatchString(version) {
			return fmt.Errorf("version %q is not an exact version: toolhost add pins what it adds", truncate(version, 40))
		}
		return nil
	}
	var (
		command, runner, ref string
		hosts                []string
	)
	switch p.RegistryType {
	case "npm":
		if !npmPackageRE.MatchString(p.Identifier) {
			return nil, fmt.Errorf("identifier %q is not an npm package name", truncate(p.Identifier, 100))
		}
		if err := pinned(); err != nil {
			return nil, err
		}
		command, runner, ref, hosts = "npx", "npx", p.Identifier+"@"+version, []string{"registry.npmjs.org"}
	case "pypi":
		if !pypiPackageRE.MatchString(p.Identifier) {
			return nil, fmt.Errorf("identifier %q is not a PyPI project name", truncate(p.Identifier, 100))
		}
		if err := pinned(); err != nil {
			return nil, err
		}
		command, runner, ref, hosts = "uvx", "uvx", p.Identifier+"@"+version, []string{"pypi.org:443", "files.pythonhosted.org:443"}
	case "oci":
		if !ociImageRE.MatchString(p.Identifier) {
			return nil, fmt.Errorf("identifier %q is not an OCI image reference", truncate(p.Identifier, 100))
		}
		ref = p.Identifier
		last := ref[strings.LastIndexByte(ref, '/')+1:]
		if !strings.Contains(last, ":") && !strings.Contains(ref, "@sha256:") {
			if err := pinned(); err != nil {
				return nil, err
			}
			ref += ":" + version
		}
		command, runner = "docker", "docker"
	case "":
		return nil, errors.New("no registryType")
	default:
		return nil, fmt.Errorf("registryType %q is not supported: toolhost add takes npm (npx), pypi (uvx) and oci (docker) packages", truncate(p.RegistryType, 40))
	}
	a := &addition{vars: t.vars}
	if p.RuntimeHint != "" && p.RuntimeHint != runner {
		t.comments = append(t.comments, fmt.Sprintf("The server.json suggests %s to run it; toolhost add uses %s.", commentText(p.RuntimeHint, 40), runner))
	}
	if p.RegistryBaseURL != "" && !slices.Contains([]string{"https://registry.npmjs.org", "https://pypi.org", "https://docker.io"}, strings.TrimRight(p.RegistryBaseURL, "/")) {
		t.comments = append(t.comments, fmt.Sprintf("The package is on %s: configure %s to use that registry.", commentText(p.RegistryBaseURL, 100), runner))
	}
	runtime, err := t.args(p.RuntimeArguments, "runtime argument")
	if err != nil {
		return nil, err
	}
	pkgArgs, err := t.args(p.PackageArguments, "package argument")
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	var optional []string
	for i, e := range p.EnvironmentVariables {
		if !envNameRE.MatchString(e.Name) {
			return nil, fmt.Errorf("environment variable %d: %q is not a variable name", i+1, truncate(e.Name, 60))
		}
		v, ok, err := t.input(&e, e.Name, "environment variable "+e.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			optional = append(optional, e.Name+": "+commentText(e.Description, 100))
			continue
		}
		env[e.Name] = v
	}
	var args []string
	switch runner {
	case "npx":
		args = append(append(append([]string{"-y"}, runtime...), ref), pkgArgs...)
	case "uvx":
		args = append(append(runtime, ref), pkgArgs...)
	case "docker":
		for _, r := range runtime {
			opt, _, _ := strings.Cut(r, "=")
			if slices.Contains(dockerUnsafe, opt) {
				return nil, fmt.Errorf("runtime argument %q would widen the container's rights: add it by hand after review if it is needed", truncate(r, 60))
			}
		}
		args = []string{"run", "-i", "--rm", "--init"}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			args = append(args, "-e", k) // docker takes the value from its own environment
		}
		args = append(append(append(args, runtime...), ref), pkgArgs...)
	}
	t.comments = append(t.comments, fmt.Sprintf("Package: %s %s, started by %s. Review its arguments and environment: they come from the server.json.", p.RegistryType, commentText(ref, 200), runner))
	for _, o := range optional {
		t.comments = append(t.comments, "Optional, not set: "+o)
	}
	a.keys = append(a.keys, "command = "+tomlString(command), "args = "+tomlArray(args))
	if len(env) > 0 {
		a.keys = append(a.keys, "env = "+tomlInline(env))
	}
	if runner == "docker" {
		t.comments = append(t.comments, "A container: docker isolates it; toolhost's native sandbox does not apply to the docker client.")
	} else {
		a.tail = append(a.tail,
			"Suggested sandbox (README \"Isolating native servers\"): uncomment once you know what the server",
			"needs: add the hosts it calls to allowed_hosts, and the directories it works in to allowed_paths.",
			`sandbox = "strict"`,
			"allowed_hosts = "+tomlArray(hosts),
			`allowed_paths = { "/data" = "rw:./data" }`,
		)
	}
	a.comments = t.comments
	return a, nil
}

// remote translates one remote.
func (t *regTranslator) remote(r *registryTransport) (*addition, error) {
	switch r.Type {
	case "streamable-http":
	case "sse":
		return nil, errors.New(`"sse" (the deprecated HTTP+SSE transport) is not supported: toolhost speaks Streamable HTTP`)
	default:
		return nil, fmt.Errorf("unknown remote type %q: toolhost takes streamable-http", truncate(r.Type, 40))
	}
	if len(r.Headers) > maxAddItems {
		return nil, fmt.Errorf("more than %d headers", maxAddItems)
	}
	u, err := t.value(r.URL, nil, "url")
	if err != nil {
		return nil, err
	}
	// Placeholders ("https://{tenant}.example.com") stand for a word.
	pu, perr := url.Parse(placeholderAnyRE.ReplaceAllString(r.URL, "x"))
	if perr != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || strings.ContainsAny(r.URL, " \t\r\n") {
		return nil, fmt.Errorf("url %q is not an http or https URL with a host", truncate(r.URL, 100))
	}
	a := &addition{vars: t.vars}
	headers := map[string]string{}
	var optional []string
	for i, h := range r.Headers {
		if !headerNameRE.MatchString(h.Name) {
			return nil, fmt.Errorf("header %d: %q is not an HTTP header name", i+1, truncate(h.Name, 60))
		}
		if strings.ContainsFunc(h.Value+h.Default, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("header %q has line breaks or other control characters", truncate(h.Name, 60))
		}
		v, ok, err := t.input(&h, upperSnake(h.Name), "header "+h.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			optional = append(optional, h.Name+": "+commentText(h.Description, 100))
			continue
		}
		headers[h.Name] = v
	}
	t.comments = append(t.comments, "Remote: streamable-http "+commentText(r.URL, 200)+" (the server runs elsewhere: no sandbox applies).")
	for _, o := range optional {
		t.comments = append(t.comments, "Optional header, not set: "+o)
	}
	a.keys = append(a.keys, "url = "+tomlString(u))
	if len(headers) > 0 {
		a.keys = append(a.keys, "headers = "+tomlInline(headers))
	}
	a.comments = t.comments
	return a, nil
}

// args translates a list of arguments.
func (t *regTranslator) args(list []registryInput, what string) ([]string, error) {
	var out []string
	for i, a := range list {
		w := fmt.Sprintf("%s %d", what, i+1)
		hint := a.ValueHint
		switch a.Type {
		case "positional":
			if hint == "" {
				hint = fmt.Sprintf("arg_%d", i+1)
			}
			v, ok, err := t.input(&a, upperSnake(hint), w)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, v)
			}
		case "named":
			if a.Name == "" || len(a.Name) > 100 || strings.ContainsFunc(a.Name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return nil, fmt.Errorf("%s: name %q is not an option name", w, truncate(a.Name, 60))
			}
			if hint == "" {
				hint = strings.TrimLeft(a.Name, "-")
			}
			v, ok, err := t.input(&a, upperSnake(hint), w)
			if err != nil {
				return nil, err
			}
			if ok {
				name, err := t.value(a.Name, nil, w)
				if err != nil {
					return nil, err
				}
				out = append(out, name, v)
			}
		default:
			return nil, fmt.Errorf("%s: unknown type %q (positional or named)", w, truncate(a.Type, 40))
		}
	}
	return out, nil
}

// input translates the value of an argument, environment variable or
// header: its fixed value (placeholders made ${VAR}), else ${VAR} (with
// its default when it has a plain one and is not secret) when it is
// required or secret or has a default; ok is false for an optional one
// without a default (left out).
func (t *regTranslator) input(in *registryInput, varName, what string) (string, bool, error) {
	if in.Value != "" {
		v, err := t.value(in.Value, in.Variables, what)
		return v, err == nil, err
	}
	if !envNameRE.MatchString(varName) {
		varName = upperSnake(varName)
	}
	why := commentText(in.Description, 100)
	if why == "" {
		why = what
	}
	def, plain := in.Default, in.Default != "" && !strings.ContainsAny(in.Default, "${}") && len(in.Default) <= maxAddString && !strings.ContainsRune(in.Default, 0)
	switch {
	case plain && !in.IsSecret:
		return "${" + varName + ":-" + def + "}", true, nil
	case in.IsRequired || in.IsSecret || def != "":
		if def != "" {
			why += " (for example " + commentText(def, 60) + ")"
		}
		if in.IsSecret {
			why += " (a secret)"
		}
		t.need(varName, why)
		return "${" + varName + "}", true, nil
	}
	return "", false, nil
}

// value translates a fixed value: "{name}" placeholders become ${NAME}
// (a variable's own fixed value, or its plain default, is used), "$"
// becomes "$$". Values longer than maxAddString or with a NUL are
// refused (headers and URLs are checked for line breaks by their callers).
func (t *regTranslator) value(s string, vars map[string]registryInput, what string) (string, error) {
	if len(s) > maxAddString {
		return "", fmt.Errorf("%s is longer than %d bytes", what, maxAddString)
	}
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("%s contains a NUL character", what)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if m := placeholderRE.FindStringSubmatch(s[i:]); m != nil {
			in, declared := vars[m[1]]
			switch {
			case declared && in.Value != "" && !strings.ContainsAny(in.Value, "{}\x00") && len(in.Value) <= maxAddString:
				b.WriteString(strings.ReplaceAll(in.Value, "$", "$$"))
			default:
				v, _, err := t.input(&registryInput{Description: in.Description, Default: in.Default, IsSecret: in.IsSecret, IsRequired: true}, upperSnake(m[1]), what+" {"+m[1]+"}")
				if err != nil {
					return "", err
				}
				b.WriteString(v)
			}
			i += len(m[0])
			continue
		}
		if s[i] == '$' {
			b.WriteString("$$")
		} else {
			b.WriteByte(s[i])
		}
		i++
	}
	return b.String(), nil
}
