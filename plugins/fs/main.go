// Command fs is a toolhost plugin that reads, lists, searches and writes files
// in the directories the host mounts into the sandbox (allowed_paths).
//
// Build: cd plugins && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fs.wasm ./fs
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/toolhost/toolhost/pdk"
)

const (
	defaultLimit     = 2000      // lines per read_file call
	defaultMaxRead   = 256 << 10 // bytes of text per read_file call
	maxImageBytes    = 5 << 20
	defaultMaxResult = 100
	maxMaxResults    = 1000
)

func init() {
	pdk.Register(
		pdk.Tool{
			Name:  "read_file",
			Title: "Read file",
			Description: "Read a text file, or a range of its lines. Returns the text; PNG/JPEG/GIF/WebP files are returned as images. " +
				"Long files are cut; the result says which offset to pass to continue.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"path": {"type": "string", "description": "Absolute path of the file, inside a mounted directory (e.g. /data/notes.txt)."},
					"offset": {"type": "integer", "minimum": 1, "description": "1-based number of the first line to return. Default 1."},
					"limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to return. Default 2000."}
				},
				"required": ["path"],
				"additionalProperties": false
			}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     readFile,
		},
		pdk.Tool{
			Name:        "list_directory",
			Title:       "List directory",
			Description: "List the entries of a directory: name, type (file, dir, symlink, other) and size in bytes, sorted by name.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"path": {"type": "string", "description": "Absolute path of the directory, inside a mounted directory (e.g. /data)."}
				},
				"required": ["path"],
				"additionalProperties": false
			}`,
			OutputSchema: `{
				"type": "object",
				"properties": {
					"path": {"type": "string"},
					"entries": {"type": "array", "items": {"type": "object", "properties": {
						"name": {"type": "string"}, "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]}, "size": {"type": "integer"}
					}, "required": ["name", "type"]}}
				},
				"required": ["path", "entries"]
			}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     listDirectory,
		},
		pdk.Tool{
			Name:  "search_files",
			Title: "Search files",
			Description: "Find files and directories under a directory whose names match a glob pattern, recursively. " +
				"A pattern without '/' matches the base name (\"*.go\"); a pattern with '/' matches the path relative to the search root, " +
				"where \"**\" matches any number of directories (\"src/**/*_test.go\"). Returns absolute paths.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"path": {"type": "string", "description": "Absolute path of the directory to search, inside a mounted directory."},
					"pattern": {"type": "string", "description": "Glob pattern: * ? [abc] within a name, ** across directories."},
					"max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Maximum number of matches to return. Default 100."}
				},
				"required": ["path", "pattern"],
				"additionalProperties": false
			}`,
			OutputSchema: `{
				"type": "object",
				"properties": {
					"matches": {"type": "array", "items": {"type": "string"}},
					"truncated": {"type": "boolean"}
				},
				"required": ["matches", "truncated"]
			}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     searchFiles,
		},
		pdk.Tool{
			Name:  "write_file",
			Title: "Write file",
			Description: "Create or overwrite a file with the given text. Missing parent directories are created. " +
				"Needs a directory mounted read-write.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"path": {"type": "string", "description": "Absolute path of the file, inside a directory mounted read-write."},
					"content": {"type": "string", "description": "The complete new content of the file."}
				},
				"required": ["path", "content"],
				"additionalProperties": false
			}`,
			Annotations: &pdk.Annotations{DestructiveHint: pdk.Bool(true), IdempotentHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     writeFile,
		},
	)
}

// roots returns the optional "roots" config: the guest paths the host
// mounted, comma-separated. When set, paths outside them are refused with a
// message naming them, and relative paths resolve against the first.
func roots() []string {
	v, _ := pdk.Config("roots")
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, path.Clean("/"+r))
		}
	}
	return out
}

// resolve cleans a path argument and checks it against the roots config.
func resolve(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", errors.New("path is empty")
	}
	rs := roots()
	if !path.IsAbs(p) {
		if len(rs) == 0 {
			return "", fmt.Errorf("path %q is relative; give an absolute path inside a mounted directory (e.g. /data/%s)", p, p)
		}
		p = path.Join(rs[0], p)
	}
	p = path.Clean(p)
	if len(rs) > 0 {
		for _, r := range rs {
			if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
				return p, nil
			}
		}
		return "", fmt.Errorf("path %s is outside the mounted directories (%s)", p, strings.Join(rs, ", "))
	}
	return p, nil
}

// explain turns an os error into a message that says what to do next.
func explain(op, p string, err error) *pdk.Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pdk.Errorf("%s %s: no such file or directory (is it inside a directory the host mounted? check the path with list_directory)", op, p)
	case errors.Is(err, syscall.EBADF):
		// Go's wasip1 port answers EBADF for a path under no preopened directory.
		return pdk.Errorf("%s %s: not inside any directory the host mounted for this plugin (allowed_paths)", op, p)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), notCapable(err), errors.Is(err, errors.ErrUnsupported):
		// A write under a read-only mount surfaces as ENOSYS ("not implemented") on wasip1.
		return pdk.Errorf("%s %s: permission denied (the directory may be mounted read-only or not mounted at all)", op, p)
	case errors.Is(err, syscall.EISDIR):
		return pdk.Errorf("%s %s: is a directory (use list_directory)", op, p)
	case errors.Is(err, syscall.ENOTDIR):
		return pdk.Errorf("%s %s: not a directory", op, p)
	}
	return pdk.Errorf("%s %s: %v", op, p, err)
}

func readFile(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	p, err := resolve(a.Path)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	if a.Offset <= 0 {
		a.Offset = 1
	}
	if a.Limit <= 0 {
		a.Limit = defaultLimit
	}
	f, err := os.Open(p)
	if err != nil {
		return explain("read_file", p, err), nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return explain("read_file", p, err), nil
	}
	if st.IsDir() {
		return pdk.Errorf("read_file %s: is a directory (use list_directory)", p), nil
	}
	if mt := imageType(p); mt != "" {
		if st.Size() > maxImageBytes {
			return pdk.Errorf("read_file %s: image is %d bytes, over the %d byte limit", p, st.Size(), maxImageBytes), nil
		}
		b, err := io.ReadAll(f)
		if err != nil {
			return explain("read_file", p, err), nil
		}
		return pdk.NewResult(pdk.TextContent(fmt.Sprintf("%s (%s, %d bytes)", p, mt, len(b))), pdk.ImageContent(b, mt)), nil
	}

	maxBytes := configInt("max_read_bytes", defaultMaxRead)
	r := bufio.NewReaderSize(f, 64<<10)
	var out strings.Builder
	line, last := 0, 0
	cut := false
	for {
		s, err := r.ReadString('\n')
		if len(s) > 0 {
			line++
			if line == 1 && strings.IndexByte(s, 0) >= 0 {
				return pdk.Errorf("read_file %s: binary file (%d bytes); read_file returns text and images only", p, st.Size()), nil
			}
			if line >= a.Offset && line < a.Offset+a.Limit && !cut {
				if out.Len()+len(s) > maxBytes {
					cut = true
					room := maxBytes - out.Len()
					for room > 0 && !utf8.RuneStart(s[room]) {
						room--
					}
					out.WriteString(s[:room])
				} else {
					out.WriteString(s)
					last = line
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return explain("read_file", p, err), nil
		}
	}
	text := strings.ToValidUTF8(out.String(), "\uFFFD")
	switch {
	case line == 0:
		return pdk.Text(""), nil
	case a.Offset > line:
		return pdk.Errorf("read_file %s: offset %d is past the end of the file (%d lines)", p, a.Offset, line), nil
	}
	sep := "\n\n"
	if strings.HasSuffix(text, "\n") {
		sep = "\n"
	}
	switch {
	case cut && last < a.Offset:
		text += fmt.Sprintf(sep+"[Line %d alone is longer than %d bytes; only its start is shown. read_file cannot show the rest of this line.]", a.Offset, maxBytes)
	case cut:
		text += fmt.Sprintf(sep+"[Truncated at %d bytes inside line %d of %d. Call read_file with offset=%d to continue.]", maxBytes, last+1, line, last+1)
	case last < line:
		text += fmt.Sprintf(sep+"[Showing lines %d-%d of %d. Call read_file with offset=%d to continue.]", a.Offset, last, line, last+1)
	}
	return pdk.Text(text), nil
}

func imageType(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	}
	return ""
}

type entry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

func listDirectory(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	p, err := resolve(a.Path)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	des, err := os.ReadDir(p)
	if err != nil {
		return explain("list_directory", p, err), nil
	}
	entries := make([]entry, 0, len(des))
	var text strings.Builder
	for _, de := range des {
		e := entry{Name: de.Name(), Type: "other"}
		switch t := de.Type(); {
		case t.IsDir():
			e.Type = "dir"
		case t&fs.ModeSymlink != 0:
			e.Type = "symlink"
		case t.IsRegular():
			e.Type = "file"
			if fi, err := de.Info(); err == nil {
				e.Size = fi.Size()
			}
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	fmt.Fprintf(&text, "%s: %d entries\n", p, len(entries))
	for _, e := range entries {
		switch e.Type {
		case "dir":
			fmt.Fprintf(&text, "[DIR]  %s/\n", e.Name)
		case "file":
			fmt.Fprintf(&text, "[FILE] %s (%d bytes)\n", e.Name, e.Size)
		default:
			fmt.Fprintf(&text, "[%s] %s\n", strings.ToUpper(e.Type), e.Name)
		}
	}
	return &pdk.Result{
		Content:           []pdk.Content{pdk.TextContent(text.String())},
		StructuredContent: map[string]any{"path": p, "entries": entries},
	}, nil
}

func searchFiles(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Path       string `json:"path"`
		Pattern    string `json:"pattern"`
		MaxResults int    `json:"max_results"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	p, err := resolve(a.Path)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	pattern := strings.Trim(strings.TrimSpace(a.Pattern), "/")
	if pattern == "" {
		return pdk.Errorf("pattern is empty"), nil
	}
	if _, err := path.Match(strings.ReplaceAll(pattern, "**", "*"), ""); err != nil {
		return pdk.Errorf("pattern %q: %v", a.Pattern, err), nil
	}
	if a.MaxResults <= 0 {
		a.MaxResults = defaultMaxResult
	}
	if a.MaxResults > maxMaxResults {
		a.MaxResults = maxMaxResults
	}
	if st, err := os.Stat(p); err != nil {
		return explain("search_files", p, err), nil
	} else if !st.IsDir() {
		return pdk.Errorf("search_files %s: not a directory", p), nil
	}
	byPath := strings.Contains(pattern, "/")
	matches := []string{}
	truncated := false
	var skipped int
	errStop := errors.New("stop")
	err = fs.WalkDir(os.DirFS(p), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			skipped++
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." {
			return nil
		}
		subject := path.Base(rel)
		if byPath {
			subject = rel
		}
		if globMatch(pattern, subject) {
			if len(matches) == a.MaxResults {
				truncated = true
				return errStop
			}
			matches = append(matches, path.Join(p, rel))
		}
		return nil
	})
	if err != nil && err != errStop {
		return explain("search_files", p, err), nil
	}
	var text strings.Builder
	if len(matches) == 0 {
		fmt.Fprintf(&text, "No matches for %q under %s.", a.Pattern, p)
	} else {
		text.WriteString(strings.Join(matches, "\n"))
	}
	if truncated {
		fmt.Fprintf(&text, "\n[Stopped at max_results=%d; narrow the pattern or path, or raise max_results.]", a.MaxResults)
	}
	if skipped > 0 {
		fmt.Fprintf(&text, "\n[%d unreadable entries were skipped.]", skipped)
	}
	return &pdk.Result{
		Content:           []pdk.Content{pdk.TextContent(text.String())},
		StructuredContent: map[string]any{"matches": matches, "truncated": truncated},
	}, nil
}

// globMatch matches a slash-separated name against pattern, where a "**"
// segment matches zero or more segments and other segments use path.Match.
func globMatch(pattern, name string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func writeFile(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	if a.Content == nil {
		return pdk.Errorf("content is required (use \"\" for an empty file)"), nil
	}
	p, err := resolve(a.Path)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return pdk.Errorf("write_file %s: is a directory", p), nil
	}
	existed := true
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		existed = false
		if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
			return explain("write_file", path.Dir(p), err), nil
		}
	}
	if err := os.WriteFile(p, []byte(*a.Content), 0o644); err != nil {
		return explain("write_file", p, err), nil
	}
	verb := "Created"
	if existed {
		verb = "Overwrote"
	}
	return pdk.Text(fmt.Sprintf("%s %s (%d bytes).", verb, p, len(*a.Content))), nil
}

func configInt(key string, def int) int {
	if v, ok := pdk.Config(key); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
		pdk.Logf(pdk.LevelWarn, "config %s=%q is not a positive integer; using %d", key, v, def)
	}
	return def
}

func main() {}
