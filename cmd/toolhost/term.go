package main

import (
	"fmt"
	"io"
	"os"

	"github.com/toolhost/toolhost/internal/termsafe"
)

// esc renders untrusted text (from a plugin or server: a description, an
// error, a status field) for one line of the terminal: control characters
// escaped (see internal/termsafe), so a backend cannot clear the screen,
// set the title or forge a line of toolhost's output. --json output does
// not go through it.
func esc(v any) string { return termsafe.Line(fmt.Sprint(v)) }

// isTerminal reports whether w is a character device (a terminal): tool
// results printed there have their control characters escaped (to a pipe
// or file they are written exactly), and a progress bar may redraw itself
// there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
