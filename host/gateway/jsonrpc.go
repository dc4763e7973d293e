package gateway

// The JSON-RPC side of the request guard (guard.go): a POST body scanned
// before the go-sdk reads it (its batch, method and ids) and the error
// responses the guard writes itself.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// writeRPCError answers with a JSON-RPC error response (JSON-RPC 2.0 §5)
// for the request of id (null when nil: it could not be determined, or
// several requests are refused at once).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// scanned is what scanBody learnt of a POST body.
type scanned struct {
	batch  bool
	n      int             // messages in the batch (counted up to MaxBatch+1)
	method string          // the method of a single request
	id     json.RawMessage // the id of a single request, as sent
}

// startsArray reports whether the first byte of br after JSON whitespace is
// '[' (a batch), leaving it unread.
func startsArray(br *bufio.Reader) bool {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return false
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		_ = br.UnreadByte()
		return c == '['
	}
}

// scanBody reads the JSON-RPC message or batch of a POST body as the
// go-sdk's decoder will (member names compared exactly, case included) and
// checks the id of every request (checkID; more than one "id" member is
// refused too). A body it cannot read (not JSON, not objects) is left to
// the go-sdk, which refuses it; a batch is read up to MaxBatch+1 messages.
func scanBody(body io.Reader) (scanned, error) {
	var sc scanned
	dec := json.NewDecoder(body)
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return sc, nil
	}
	switch tok {
	case json.Delim('{'):
		sc.n = 1
		method, id, _, err := scanMessage(dec)
		sc.method, sc.id = method, id
		return sc, err
	case json.Delim('['):
		sc.batch = true
		for dec.More() && sc.n <= MaxBatch {
			sc.n++
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				return sc, nil
			}
			_, _, ok, err := scanMessage(dec)
			if err != nil {
				return sc, fmt.Errorf("batch message %d: %w", sc.n, err)
			}
			if !ok {
				return sc, nil
			}
		}
	}
	return sc, nil
}

// scanMessage reads the members of one message whose '{' was read, and
// returns its method and id if it is a request, and whether it could be
// read.
func scanMessage(dec *json.Decoder) (method string, id json.RawMessage, ok bool, err error) {
	isRequest, ids := false, 0
	for dec.More() {
		tok, terr := dec.Token()
		key, isKey := tok.(string)
		if terr != nil || !isKey {
			return "", nil, false, nil
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return "", nil, false, nil
		}
		switch key {
		case "id":
			ids++
			id = raw
		case "method":
			isRequest = true
			_ = json.Unmarshal(raw, &method)
		}
	}
	if tok, terr := dec.Token(); terr != nil || tok != json.Delim('}') {
		return "", nil, false, nil
	}
	if !isRequest || ids == 0 {
		return method, nil, true, nil
	}
	if ids > 1 {
		return method, nil, true, errors.New(`a request has more than one "id" member: send one`)
	}
	return method, id, true, checkID(id)
}

var plainInteger = lazyre.New(`^-?(0|[1-9][0-9]*)$`)

// checkID returns an error unless id, a request's id as sent, is one the
// gateway echoes exactly: MCP 2025-11-25 basic ("Requests") allows a string
// or an integer, not null; the go-sdk holds a number as a float64 and
// answers with it as an int64, so an integer must be written plainly (no
// fraction, exponent or -0) and be one a float64 holds exactly within
// int64 (every integer up to 2^53 in magnitude, and larger ones that are
// multiples of a power of two); a string must be valid UTF-8 without lone
// UTF-16 surrogate escapes (which the go-sdk would replace with U+FFFD).
func checkID(id json.RawMessage) error {
	shown := string(id)
	if len(shown) > 40 {
		shown = shown[:40] + "..."
	}
	switch id[0] {
	case '"':
		if !utf8.Valid(id) || loneSurrogate(id) {
			return fmt.Errorf("id %s is not valid Unicode (invalid UTF-8 or a lone surrogate escape), which would not come back as sent: send another id", shown)
		}
		return nil
	case 'n':
		return errors.New("id null is not allowed: MCP (2025-11-25 basic, \"Requests\") requires a string or an integer")
	case 't', 'f', '{', '[':
		return fmt.Errorf("id %s is not allowed: MCP (2025-11-25 basic, \"Requests\") requires a string or an integer", shown)
	}
	t := string(id)
	if !plainInteger.MatchString(t) || t == "-0" {
		return fmt.Errorf("id %s is not a plain integer: MCP (2025-11-25 basic, \"Requests\") requires a string or an integer, and the gateway echoes an integer only as written without fraction, exponent or -0", shown)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	f := float64(n)
	if err != nil || f >= 0x1p63 || int64(f) != n {
		return fmt.Errorf("id %s cannot be echoed exactly (ids are held as float64 within int64): use an integer of at most 2^53 in magnitude, or a string", shown)
	}
	return nil
}

// loneSurrogate reports whether the JSON string s has a \u escape of a
// UTF-16 surrogate that is not part of a high-low pair.
func loneSurrogate(s json.RawMessage) bool {
	hex := func(i int) (rune, bool) {
		if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok {
			i++ // another escape: skip the escaped byte
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			lo, ok := hex(i + 6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}
