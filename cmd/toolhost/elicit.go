package main

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// stdinIsTerminal reports whether the CLI may ask the user: stdin is a
// terminal (a character device). A variable so that tests can replace it.
var stdinIsTerminal = func() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// maxAnswer bounds one line the user types.
const maxAnswer = 64 << 10

// elicitor answers servers' elicitation requests for the CLI: on a
// terminal, a form on stderr, answered on stdin, one line per field; otherwise
// it declines, saying why on stderr. Requests are asked one at a time.
type elicitor struct {
	mu     sync.Mutex
	stderr io.Writer
	in     *bufio.Reader // over stdin, made on first use
}

func (e *elicitor) elicit(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	who := "server " + req.Backend
	if req.Approval {
		// toolhost itself asks: may a grant = "ask" tool run?
		who = "toolhost"
	}
	if req.Call != nil {
		who += " (during " + req.Call.Tool + ")"
	}
	p := req.Params
	if p.Mode == "url" {
		fmt.Fprintf(e.stderr, "toolhost: %s asks you to open %s: %s\ntoolhost: declined: toolhost answers form requests only\n", who, termText(p.URL, 2048), termText(p.Message, 4096))
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if !stdinIsTerminal() {
		fmt.Fprintf(e.stderr, "toolhost: %s asks for input (%s); declined: stdin is not a terminal. Run the command in a terminal to answer, or configure the server not to ask.\n", who, termText(p.Message, 200))
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if e.in == nil {
		e.in = bufio.NewReader(stdin)
	}
	fmt.Fprintf(e.stderr, "toolhost: %s asks:\n  %s\n", who, termText(p.Message, 4096))
	ans, err := e.ask(ctx, "Answer? [y]es, [n]o (decline), [c]ancel: ")
	if err != nil {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	switch strings.ToLower(ans) {
	case "y", "yes":
	case "n", "no":
		return &mcp.ElicitResult{Action: "decline"}, nil
	default:
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	content, err := e.form(ctx, p.RequestedSchema)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolhost: cancelled: %v\n", err)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// form asks for each property of schema (a flat object of primitives, as
// the go-sdk has checked), in name order: required fields until given, an
// empty line leaving an optional one out (or taking its default).
func (e *elicitor) form(ctx context.Context, schema any) (map[string]any, error) {
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]any{}
	for _, name := range names {
		prop, _ := props[name].(map[string]any)
		typ, _ := prop["type"].(string)
		label := termText(name, 64)
		if t, ok := prop["title"].(string); ok && t != "" {
			label += " — " + termText(t, 200)
		}
		hint := typ
		if required[name] {
			hint += ", required"
		}
		enum := enumOf(prop)
		if len(enum) > 0 {
			hint += ", one of " + termText(strings.Join(enum, " | "), 1000)
			if typ == "array" {
				hint += ", comma-separated"
			}
		}
		def, hasDef := prop["default"]
		if hasDef {
			hint += fmt.Sprintf(", default %s", termText(fmt.Sprint(def), 200))
		}
		if d, ok := prop["description"].(string); ok && d != "" {
			fmt.Fprintf(e.stderr, "  %s\n", termText(d, 1000))
		}
		for attempt := 0; ; attempt++ {
			if attempt == 3 {
				return nil, fmt.Errorf("no valid answer for %s", label)
			}
			line, err := e.ask(ctx, fmt.Sprintf("%s (%s): ", label, hint))
			if err != nil {
				return nil, err
			}
			if line == "" {
				if hasDef {
					out[name] = def
					break
				}
				if !required[name] {
					break
				}
				fmt.Fprintln(e.stderr, "  required")
				continue
			}
			v, err := parseAnswer(typ, line, enum)
			if err != nil {
				fmt.Fprintf(e.stderr, "  %v\n", err)
				continue
			}
			out[name] = v
			break
		}
	}
	return out, nil
}

func enumOf(prop map[string]any) []string {
	src := prop["enum"]
	if items, ok := prop["items"].(map[string]any); ok {
		src = items["enum"]
	}
	var out []string
	if l, ok := src.([]any); ok {
		for _, v := range l {
			out = append(out, fmt.Sprint(v))
		}
	}
	if l, ok := prop["oneOf"].([]any); ok {
		for _, v := range l {
			if m, ok := v.(map[string]any); ok {
				if c, ok := m["const"].(string); ok {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// parseAnswer turns a typed line into a value of the field's type.
func parseAnswer(typ, line string, enum []string) (any, error) {
	inEnum := func(s string) error {
		if len(enum) == 0 {
			return nil
		}
		for _, e := range enum {
			if e == s {
				return nil
			}
		}
		return fmt.Errorf("not one of the choices")
	}
	switch typ {
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("answer yes or no")
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer")
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number")
		}
		return f, nil
	case "array":
		var out []any
		for _, s := range strings.Split(line, ",") {
			s = strings.TrimSpace(s)
			if err := inEnum(s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return line, inEnum(line)
	}
}

// ask prompts on stderr and reads one line (at most maxAnswer bytes) from
// stdin; EOF or ctx done is an error (the request is cancelled).
func (e *elicitor) ask(ctx context.Context, prompt string) (string, error) {
	fmt.Fprint(e.stderr, prompt)
	type answer struct {
		s   string
		err error
	}
	ch := make(chan answer, 1)
	// The read cannot be interrupted: when ctx ends first, it finishes
	// with the user's next line (or EOF), which is then dropped.
	go func() {
		var b strings.Builder
		for b.Len() <= maxAnswer {
			r, _, err := e.in.ReadRune()
			if err != nil {
				ch <- answer{b.String(), err}
				return
			}
			if r == '\n' {
				break
			}
			b.WriteRune(r)
		}
		ch <- answer{strings.TrimSpace(b.String()), nil}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			fmt.Fprintln(e.stderr)
		}
		return a.s, a.err
	case <-ctx.Done():
		fmt.Fprintln(e.stderr)
		return "", ctx.Err()
	}
}

// termText makes a server's text safe to print on a terminal: at most n
// bytes, with control, format (bidi) and other non-graphic characters
// escaped.
func termText(s string, n int) string {
	cut := len(s) > n
	if cut {
		s = s[:n]
	}
	q := strconv.QuoteToGraphic(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	if cut {
		q += "…"
	}
	return q
}
