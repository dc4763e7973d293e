package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/internal/lazyre"
)

func (s *Stdio) protocolError() error {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	return s.protoErr
}

// lineFilter passes the child's stdout through to the go-sdk's decoder one
// line at a time, checking each line is a JSON value first, so a violation
// is reported with the offending text instead of a decoder error.
type lineFilter struct {
	s      *Stdio
	r      *bufio.Reader
	max    int
	strict bool      // StrictStdout
	buf    []byte    // the rest of the current line, with its newline
	n      int       // lines read
	over   *overlong // the line just discarded for its size
}

func (f *lineFilter) Read(p []byte) (n int, err error) {
	defer func() {
		if err != nil {
			// The go-sdk's calls end with the connection; so do those
			// made here (stdio_fast.go).
			f.s.fast.stop(err)
		}
	}()
	for len(f.buf) == 0 {
		line, err := f.readLine()
		if err != nil {
			// Noted before anyone learns of it: did the session end on
			// its own (EOF: the child exited or closed stdout), or because
			// Close closed our end?
			f.s.mu.Lock()
			if !f.s.closed {
				f.s.endedAlone = true
			}
			f.s.mu.Unlock()
			return 0, err
		}
		f.n++
		if f.over != nil {
			// An overlong line, already discarded: answer its request.
			o := f.over
			f.over = nil
			f.skip()
			if f.s.fast.tooLarge(o.id, o.size, f.max) {
				f.s.logger.Warn("response over the size limit dropped; its request fails", "line", f.n, "bytes", o.size, "limit", f.max)
				continue
			}
			if o.id == nil {
				f.s.logger.Warn("stdout line over the size limit dropped (not a response)", "line", f.n, "bytes", o.size, "limit", f.max)
				continue
			}
			f.s.logger.Warn("response over the size limit dropped; its request fails", "line", f.n, "bytes", o.size, "limit", f.max)
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": o.id, "error": map[string]any{
				"code":    codeOutputTooLarge,
				"message": fmt.Sprintf("%s%d bytes, over the limit of %d bytes (max_output)", tooLargePrefix, o.size, f.max),
			}})
			f.buf = append(msg, '\n')
			continue
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if !json.Valid(trimmed) {
			msg := fmt.Sprintf("stdout line %d is not a JSON-RPC message: %q", f.n, clip(trimmed, 120))
			if f.strict {
				return 0, f.violation(msg + " (strict_stdout)")
			}
			if n := f.skip(); n <= 10 || n%1000 == 0 {
				f.s.logger.Warn("skipped a stdout line that is not JSON-RPC", "line", f.n, "text", fmt.Sprintf("%q", clip(trimmed, 200)), "skipped", n)
			}
			continue
		}
		tapLine(f.s.calls, f.s.progress, trimmed) // log messages and progress, ahead of the result
		if f.s.fast.take(trimmed) {
			continue // the answer to a call made by fastCalls
		}
		f.buf = append(trimmed, '\n')
	}
	n = copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// readLine returns the next line of stdout. A line longer than f.max is
// read to its end without being kept (only its first and last few KiB, to
// find its JSON-RPC id): readLine then returns an empty line and sets
// f.over.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	var o *overlong
	for {
		chunk, err := f.r.ReadSlice('\n')
		if o == nil && len(line)+len(chunk) > f.max {
			o = &overlong{head: append([]byte(nil), line...), size: len(line)}
			line = nil
		}
		if o != nil {
			o.add(chunk)
		} else {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && !(err == io.EOF && (len(line) > 0 || o != nil)) {
			return nil, err
		}
		if o != nil {
			o.id = o.findID()
			f.over = o
			return nil, nil
		}
		return line, nil
	}
}

// Overlong responses: the go-sdk gets a JSON-RPC error in their place,
// which do turns into ErrOutputTooLarge.
const (
	codeOutputTooLarge = -32099
	tooLargePrefix     = "toolhost: response of "
	peekSize           = 4 << 10
)

// overlong is what is kept of a line over the limit: its size, and its
// first and last peekSize bytes.
type overlong struct {
	head, tail []byte
	size       int
	id         any // its JSON-RPC id (a number or a string), or nil
}

func (o *overlong) add(chunk []byte) {
	o.size += len(chunk)
	if room := peekSize - len(o.head); room > 0 {
		o.head = append(o.head, chunk[:min(room, len(chunk))]...)
	}
	o.tail = append(o.tail, chunk...)
	if len(o.tail) > 2*peekSize {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-peekSize:]...)
	}
}

// idAtEnd matches a top-level "id" member that ends the object (servers
// that write the id last, as the TypeScript SDK does).
var idAtEnd = lazyre.New(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*}\s*$`)

// findID finds the line's top-level "id": among the members before
// "result" or "error" in its head, else as the last member in its tail.
func (o *overlong) findID() any {
	dec := json.NewDecoder(bytes.NewReader(o.head))
	dec.UseNumber()
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for {
			k, err := dec.Token()
			key, ok := k.(string)
			if err != nil || !ok || key == "result" || key == "error" || key == "params" {
				break
			}
			var v any
			if err := dec.Decode(&v); err != nil {
				break
			}
			if key == "id" {
				return v
			}
		}
	}
	if m := idAtEnd.FindSubmatch(bytes.TrimSpace(o.tail)); m != nil {
		var v any
		d := json.NewDecoder(bytes.NewReader(m[1]))
		d.UseNumber()
		if d.Decode(&v) == nil {
			return v
		}
	}
	return nil
}

// skip counts a skipped line and returns the count.
func (f *lineFilter) skip() int {
	f.s.tailMu.Lock()
	defer f.s.tailMu.Unlock()
	f.s.skipped++
	return f.s.skipped
}

func (f *lineFilter) violation(msg string) error {
	f.s.tailMu.Lock()
	if f.s.protoErr == nil {
		f.s.protoErr = fmt.Errorf("%w: %s", ErrProtocol, msg)
	}
	err := f.s.protoErr
	f.s.tailMu.Unlock()
	f.s.logger.Error("protocol violation", "error", msg)
	return err
}

func (f *lineFilter) Close() error { return f.s.stdout.Close() }

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
