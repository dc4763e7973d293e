package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Errors of Object.
var (
	// ErrSyntax: the text is not one valid JSON value.
	ErrSyntax = errors.New("not valid JSON")
	// ErrNotObject: the text is valid JSON, but not an object.
	ErrNotObject = errors.New("not a JSON object")
)

// Object is toolhost's one parser of a tool call's arguments given as text
// (CallTool's json.RawMessage, []byte and string forms, the CLI's --args):
// it checks that b is one JSON object (MCP 2025-11-25, server/tools:
// arguments are an object), with optional space around it, and returns it
// without that space. Errors: ErrSyntax, or ErrNotObject for another kind
// of value (Describe names it). Empty text and null are not objects:
// callers that take them for "no arguments" check first.
func Object(b []byte) ([]byte, error) {
	t := bytes.TrimSpace(b)
	if !json.Valid(t) {
		return t, ErrSyntax
	}
	if t[0] != '{' {
		return t, ErrNotObject
	}
	return t, nil
}

// Describe names what the JSON text s is, for an error: "an array", "a
// string", "a number", "a boolean", "<nil>" for null, or "invalid JSON
// (why)".
func Describe(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "invalid JSON (" + err.Error() + ")"
	}
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
