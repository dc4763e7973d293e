package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a configuration file: a TOML syntax error, an
// unknown key, a value of the wrong type, a failed ${VAR} expansion or a
// failed validation rule.
//
// Error formats as "FILE:LINE: KEY: MSG"; parts that are empty are left out
// (without a file name the position reads "line LINE").
type Error struct {
	// File is the file name given to Load (or Options.Name); empty for
	// unnamed input.
	File string
	// Line is the 1-based line the problem stands on; 0 when unknown.
	Line int
	// Key is the dotted TOML key path, quoted as in TOML where needed
	// (`servers.everything.command`, `plugins.fs.allowed_paths."/data"`);
	// empty for problems that concern no key (most syntax errors).
	Key string
	// Msg says what is wrong and what to do about it.
	Msg string
	// Err is the underlying error, when there is one (Config.Check's
	// problems with a file: fs.ErrNotExist, sandbox.ErrABI, ...); its text
	// is part of Msg.
	Err error
}

// Unwrap returns Err, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line))
	case e.File != "":
		b.WriteString(e.File)
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line))
	}
	for _, part := range []string{e.Key, e.Msg} {
		if part == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(part)
	}
	return b.String()
}

// ErrorList is every problem found in one configuration file, sorted by
// line. Parse and Load return an ErrorList (never empty) for any problem in
// the file's content; errors.As finds both the list and, through Unwrap, its
// first *Error.
type ErrorList []*Error

// Error formats the list one error per line.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the list, for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sort orders the list by line, then key, keeping discovery order for ties.
func (l ErrorList) sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Key, b.Key))
	})
}
