// Package lazyre holds regular expressions that are compiled at their first
// use instead of at package initialisation. A package-level
// regexp.MustCompile runs in every process that links the package, whatever
// the command: toolhost's start paid about 20% of its CPU time compiling
// expressions that most commands never use (issue 26, item 3; a counted
// repetition such as {1,64} alone costs over 100 µs). A Regexp has the
// methods of *regexp.Regexp that toolhost uses, so a declaration
//
//	var nameRE = regexp.MustCompile(`^[a-z]+$`)
//
// becomes
//
//	var nameRE = lazyre.New(`^[a-z]+$`)
//
// and its uses stay as they are. New only records the expression; the
// first method call compiles it (safe for concurrent use; a sync.Once) and
// panics, as regexp.MustCompile does, if it does not compile. CompileAll
// compiles every expression recorded so far, so that a test finds a bad one
// without exercising its use (cmd/toolhost TestLazyRegexpsCompile).
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled at its first use. Its zero value
// is not usable: make one with New.
type Regexp struct {
	expr string
	re   func() *regexp.Regexp
}

var (
	mu  sync.Mutex
	all []*Regexp
)

// New returns expr, to be compiled (regexp.MustCompile) at its first use.
// It is meant for package-level variables.
func New(expr string) *Regexp {
	r := &Regexp{expr: expr, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
	mu.Lock()
	all = append(all, r)
	mu.Unlock()
	return r
}

// Regexp returns the compiled expression, compiling it if it is the first
// use.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

// String returns the source text of the expression (not compiling it).
func (r *Regexp) String() string { return r.expr }

// MatchString is (*regexp.Regexp).MatchString.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindStringSubmatch is (*regexp.Regexp).FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// FindString is (*regexp.Regexp).FindString.
func (r *Regexp) FindString(s string) string { return r.re().FindString(s) }

// FindSubmatch is (*regexp.Regexp).FindSubmatch.
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.re().FindSubmatch(b) }

// ReplaceAllStringFunc is (*regexp.Regexp).ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}

// ReplaceAllString is (*regexp.Regexp).ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }

// CompileAll compiles every expression New has recorded (in this process:
// those of the packages linked into it) and returns the source of those that
// do not compile, with their errors; nil when all do.
func CompileAll() map[string]error {
	mu.Lock()
	list := append([]*Regexp(nil), all...)
	mu.Unlock()
	var bad map[string]error
	for _, r := range list {
		if _, err := regexp.Compile(r.expr); err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[r.expr] = err
		}
	}
	return bad
}
