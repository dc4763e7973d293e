package host

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/internal/jsonx"
)

// args are a tools/call's arguments: the value given to CallTool (nil, a
// JSON text as json.RawMessage, []byte or string, or a value that encodes
// to a JSON object), made once into the JSON text of an object and, when a
// layer needs it, decoded once. The caller makes them (newArgs) before the
// op enters the pipeline; the layers read them: audit for the record's
// hash and redacted copy, validate to refuse or check them, transport to
// send their text. A fallback call shares its tool's.
//
// The work is done on first use and kept: an op belongs to one goroutine
// (a fallback runs on its tool's, while the tool's op waits for it), so no
// lock is needed. Decoding is left until a layer needs the value (the
// audit log is on, or the tool has an inputSchema to check), since most
// calls need only the text.
type args struct {
	given any
	raw   []byte // the JSON text of the object ("{}" for none)
	val   any    // raw decoded (jsonx.Decode), once state is argsDecoded
	err   error  // why they are refused (wraps ErrInvalidArguments)
	state uint8
}

// What args has made of its arguments (args.state).
const (
	argsGiven   = iota // nothing yet
	argsText           // raw and err, the text checked to be a JSON object
	argsDecoded        // raw, val and err, the text decoded
)

// newArgs returns the arguments given to a tools/call, not yet parsed.
func newArgs(given any) args { return args{given: given} }

// text returns the JSON text of the arguments' object, which the backend
// is sent, or why they are refused (an error wrapping
// ErrInvalidArguments, with what could be made of them as text: the audit
// record hashes that).
func (a *args) text() ([]byte, error) {
	if a.state == argsGiven {
		a.raw, a.err = argsJSON(a.given, false)
		a.state = argsText
	}
	return a.raw, a.err
}

// value returns the arguments decoded (JSON values, numbers as
// json.Number: the form the validator and the audit record's canonical
// form take), or text's error.
func (a *args) value() (any, error) {
	switch a.state {
	case argsDecoded:
		return a.val, a.err
	case argsGiven:
		// The decoder checks the text: argsJSON leaves that to it.
		a.raw, a.err = argsJSON(a.given, true)
	}
	a.state = argsDecoded
	if a.err != nil {
		return nil, a.err
	}
	v, derr := decodeJSON(a.raw)
	if derr != nil {
		a.err = argsError(a.given, derr)
		return nil, a.err
	}
	a.val = v
	return v, nil
}

// argsJSON is rawArgs without its check that the text is valid JSON where
// that check would be done twice: for a call that decodes its arguments
// (decodes true), the decoder finds invalid text (and argsError words the
// error as rawArgs does), and text made by json.Marshal is valid by
// construction. It returns the JSON text of args's object ("{}" for none);
// its errors, and the text returned with them, are rawArgs's.
func argsJSON(args any, decodes bool) ([]byte, error) {
	raw, isText := textArgs(args)
	switch {
	case !isText && args != nil:
		if b, err := json.Marshal(args); err == nil && len(b) > 0 && b[0] == '{' {
			return b, nil
		}
		// null, another kind of value, or no JSON at all.
	case isText && decodes:
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			return t, nil
		}
	}
	return rawArgs(args)
}

// textArgs returns the text of arguments given as JSON text
// (json.RawMessage, []byte or string), and false for any other form.
func textArgs(args any) ([]byte, bool) {
	switch a := args.(type) {
	case json.RawMessage:
		return a, true
	case []byte:
		return a, true
	case string:
		return []byte(a), true
	}
	return nil, false
}

// argsError is the error of arguments given as text that argsJSON accepted
// but the decoder rejected (derr): rawArgs's error for them.
func argsError(args any, derr error) error {
	if _, err := rawArgs(args); err != nil {
		return err
	}
	return fmt.Errorf("%w: %v", ErrInvalidArguments, derr)
}

// decodeJSON is jsonx.Decode: the form the validator takes.
var decodeJSON = jsonx.Decode

// rawArgs turns the accepted argument forms into the JSON text of an object
// ("{}" for none). On error it also returns what it could make of args, for
// the audit record.
func rawArgs(args any) ([]byte, error) {
	raw, isText := textArgs(args)
	if !isText {
		if args == nil {
			return []byte("{}"), nil
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		raw = b
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}"), nil
	}
	if _, err := jsonx.Object(trimmed); err != nil {
		return trimmed, fmt.Errorf("%w: want a JSON object, got %s", ErrInvalidArguments, jsonx.Describe(string(trimmed)))
	}
	return trimmed, nil
}
