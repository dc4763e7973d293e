package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on text a backend sends that is not a result (results are bounded
// by max_output in the host). A hostile server must not be able to make the
// host log, store or print megabytes through an error message or a status
// field.
const (
	// MaxErrorText caps the text of an error a server returns (a JSON-RPC
	// error's message and data, as rendered by the go-sdk) and the
	// server's instructions: 4096 bytes, then "… (N bytes cut)".
	MaxErrorText = 4096

	// MaxInfoText caps each string of a server's serverInfo (name,
	// version, title): 256 bytes.
	MaxInfoText = 256

	// MaxListPages caps the pages (nextCursor) one list operation follows:
	// 100.
	MaxListPages = 100

	// MaxTools caps the items one list operation returns in all (tools,
	// resources or prompts of one backend): 10000.
	MaxTools = 10000
)

// ErrListLimit: a backend's tools/list (or resources/list, prompts/list)
// went on for more than MaxListPages pages or returned more than MaxTools
// items; the list is refused as a whole. The message names the cap. The
// host's start of the backend fails (and is retried with backoff); the
// backend's other operations keep working.
var ErrListLimit = errors.New("backend list exceeds a cap")

// ListCap counts the pages and items of one list operation.
type ListCap struct {
	Pages, Items int
}

// Page records a page of n items and returns an error wrapping
// ErrListLimit when a cap is exceeded, or nil. what names the items
// ("tools").
func (c *ListCap) Page(what string, n int) error {
	c.Pages++
	c.Items += n
	switch {
	case c.Items > MaxTools:
		return fmt.Errorf("more than %d %s (the cap on one backend's %s, transport.MaxTools): %w", MaxTools, what, what, ErrListLimit)
	case c.Pages > MaxListPages:
		return fmt.Errorf("more than %d pages of %s (nextCursor never ended; the cap is transport.MaxListPages): %w", MaxListPages, what, ErrListLimit)
	}
	return nil
}

// ListPaged is the one pagination loop of toolhost (MCP 2025-11-25,
// server/utilities/pagination): it calls list with the cursor "" and then
// each nextCursor it returns, until one is "", and returns every page's
// items in order. It follows at most MaxListPages pages and MaxTools items
// in all (beyond either: an error wrapping ErrListLimit; what names the
// items, "tools"). An error of list is returned as it is.
func ListPaged[T any](ctx context.Context, what string, list func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	var lc ListCap
	cursor := ""
	for {
		items, next, err := list(ctx, cursor)
		if err != nil {
			return nil, err
		}
		if err := lc.Page(what, len(items)); err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if lc.Pages == MaxListPages {
			return nil, lc.Page(what, 0)
		}
		cursor = next
	}
}

// CutText returns s cut to at most max bytes (on a UTF-8 boundary), with a
// note of how many bytes were cut; s itself when it fits.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "… (" + strconv.Itoa(len(s)-i) + " bytes cut)"
}

// cutError is an error whose text was cut to MaxErrorText; errors.Is and
// errors.As still see the original chain.
type cutError struct {
	msg string
	err error
}

func (e *cutError) Error() string { return e.msg }
func (e *cutError) Unwrap() error { return e.err }

// capErr bounds err's text to MaxErrorText.
func capErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); len(msg) > MaxErrorText {
		return &cutError{msg: CutText(msg, MaxErrorText), err: err}
	}
	return err
}

// capInit bounds the strings of a server's InitializeResult that the host
// keeps and shows (serverInfo, instructions).
func capInit(r *mcp.InitializeResult) *mcp.InitializeResult {
	if r == nil {
		return nil
	}
	c := *r
	if r.ServerInfo != nil {
		si := *r.ServerInfo
		si.Name = CutText(si.Name, MaxInfoText)
		si.Version = CutText(si.Version, MaxInfoText)
		si.Title = CutText(si.Title, MaxInfoText)
		c.ServerInfo = &si
	}
	c.Instructions = CutText(c.Instructions, MaxErrorText)
	return &c
}
